/* parsing.c - the parsing kernel family: ParseExample and ParseExampleV2 over serialized tf.Example.
 *
 * Examples are decoded by a small wire-format walker over the bytes (no protobuf-c objects, no
 * copies): Example{features=1} -> Features{feature=1: map entry {key=1, value=2}} -> Feature
 * {bytes_list=1 | float_list=2 | int64_list=3} -> list{value=1, packed or not}. Every length and
 * varint is bounds-checked, so hostile bytes give an error naming the example, never a crash.
 * Semantics follow TF's fast parser: a repeated map key's last entry wins; a Feature's kind is its
 * first field and every field must be of that kind; an empty Feature counts as missing for dense
 * keys and as no values for sparse and ragged ones; unknown fields are skipped.
 *
 * Outputs: dense keys [batch] + shape (a leading -1 dim = variable length, padded with the
 * default to the batch maximum); sparse keys as (indices, values, dense_shape); ragged keys (V2,
 * vector input) as (values, row_splits). */
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "runtime/kernel.h"

/* ---- wire format ---------------------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
} slice;

/* Bytes used, or 0 when the varint is malformed or runs past the end. */
static size_t get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  uint64_t x = 0;
  for (size_t i = 0; i < 10 && p + i < end; i++) {
    x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      if (i == 9 && p[i] > 1) return 0;
      *v = x;
      return i + 1;
    }
  }
  return 0;
}

/* Reads one field header and, for length-delimited fields, the payload; advances *p. Returns 0 on
 * malformed input. *val holds varint values; *sub the payload of wire types 1, 2 and 5. */
static int next_field(const uint8_t **p, const uint8_t *end, uint32_t *field, int *wire, uint64_t *val, slice *sub) {
  uint64_t tag;
  size_t k = get_varint(*p, end, &tag);
  if (!k) return 0;
  *p += k;
  *field = (uint32_t)(tag >> 3);
  *wire = (int)(tag & 7);
  if (*field == 0 || (tag >> 3) > 0x1fffffffu) return 0;
  switch (*wire) {
    case 0:
      k = get_varint(*p, end, val);
      if (!k) return 0;
      *p += k;
      return 1;
    case 1:
    case 5: {
      size_t w = *wire == 1 ? 8 : 4;
      if ((size_t)(end - *p) < w) return 0;
      sub->p = *p;
      sub->n = w;
      *p += w;
      return 1;
    }
    case 2: {
      uint64_t len;
      k = get_varint(*p, end, &len);
      if (!k) return 0;
      *p += k;
      if (len > (uint64_t)(end - *p)) return 0;
      sub->p = *p;
      sub->n = (size_t)len;
      *p += len;
      return 1;
    }
    default:
      return 0; /* groups are not valid in tf.Example */
  }
}

enum { KIND_NONE = 0, KIND_BYTES = 1, KIND_FLOAT = 2, KIND_INT64 = 3 };

static int kind_of_dtype(int dtype) {
  return dtype == SM_STRING ? KIND_BYTES : dtype == SM_FLOAT ? KIND_FLOAT : dtype == SM_INT64 ? KIND_INT64 : -1;
}

static const char *kind_name(int kind) {
  return kind == KIND_BYTES ? "string" : kind == KIND_FLOAT ? "float" : kind == KIND_INT64 ? "int64" : "none";
}

/* Counts the values of a list message of `kind`; 0 on malformed input. */
static int list_count(slice l, int kind, int64_t *count) {
  const uint8_t *p = l.p, *end = l.p + l.n;
  int64_t c = 0;
  while (p < end) {
    uint32_t f;
    int w;
    uint64_t v;
    slice sub = {0, 0};
    if (!next_field(&p, end, &f, &w, &v, &sub)) return 0;
    if (f != 1) continue;
    if (kind == KIND_BYTES) {
      if (w != 2) return 0;
      c++;
    } else if (kind == KIND_FLOAT) {
      if (w == 5) {
        c++;
      } else if (w == 2) {
        if (sub.n % 4) return 0;
        c += (int64_t)(sub.n / 4);
      } else {
        return 0;
      }
    } else {
      if (w == 0) {
        c++;
      } else if (w == 2) {
        const uint8_t *r = sub.p, *rend = sub.p + sub.n;
        while (r < rend) {
          uint64_t x;
          size_t used = get_varint(r, rend, &x);
          if (!used) return 0;
          r += used;
          c++;
        }
      } else {
        return 0;
      }
    }
  }
  *count = c;
  return 1;
}

/* A Feature's kind (its first field; KIND_NONE when empty) and value count, validating every
 * field. 0 on malformed input or mixed kinds. */
static int feature_scan(slice f, int *kind, int64_t *count) {
  const uint8_t *p = f.p, *end = f.p + f.n;
  int k = KIND_NONE;
  int64_t total = 0;
  while (p < end) {
    uint32_t fn;
    int w;
    uint64_t v;
    slice sub = {0, 0};
    if (!next_field(&p, end, &fn, &w, &v, &sub)) return 0;
    if (fn < 1 || fn > 3) continue;
    if (w != 2) return 0;
    if (k == KIND_NONE) k = (int)fn;
    if ((int)fn != k) return 0;
    int64_t c;
    if (!list_count(sub, k, &c)) return 0;
    total += c;
  }
  *kind = k;
  *count = total;
  return 1;
}

/* Writes a validated Feature's values to out[at..]. */
static sm_status *feature_copy(slice f, int kind, sm_tensor *out, int64_t at) {
  const uint8_t *p = f.p, *end = f.p + f.n;
  void *d = sm_tensor_data(out);
  while (p < end) {
    uint32_t fn;
    int w;
    uint64_t v;
    slice sub = {0, 0};
    next_field(&p, end, &fn, &w, &v, &sub);
    if ((int)fn != kind) continue;
    const uint8_t *q = sub.p, *qend = sub.p + sub.n;
    while (q < qend) {
      uint32_t lf;
      int lw;
      uint64_t lv;
      slice ls = {0, 0};
      next_field(&q, qend, &lf, &lw, &lv, &ls);
      if (lf != 1) continue;
      if (kind == KIND_BYTES) {
        sm_status *s = sm_tensor_set_string(out, at++, ls.p, ls.n);
        if (s) return s;
      } else if (kind == KIND_FLOAT) {
        memcpy((float *)d + at, ls.p, ls.n);
        at += (int64_t)(ls.n / 4);
      } else if (lw == 0) {
        ((int64_t *)d)[at++] = (int64_t)lv;
      } else {
        const uint8_t *r = ls.p, *rend = ls.p + ls.n;
        while (r < rend) {
          uint64_t x = 0;
          size_t used = get_varint(r, rend, &x);
          if (!used) break; /* validated already; malformed tails were refused */
          ((int64_t *)d)[at++] = (int64_t)x;
          r += used;
        }
      }
    }
  }
  return NULL;
}

/* ---- configuration -------------------------------------------------------------------------- */

enum { CFG_DENSE = 0, CFG_SPARSE = 1, CFG_RAGGED = 2 };

typedef struct {
  int dtype;
  int rank; /* of the per-example shape */
  int64_t dims[SM_MAX_RANK];
  int varlen;     /* dims[0] == -1 */
  int64_t stride; /* elements per example (fixed) or per row (variable length) */
} dense_cfg;

typedef struct {
  int v2;
  int nsparse, ndense, nragged;
  int *sparse_types, *ragged_types, *split_types;
  dense_cfg *dense;
  /* flat input / output indices of each arg's first element */
  int in_sparse_keys, in_dense_keys, in_ragged_keys, in_defaults;
  int out_sp_idx, out_sp_val, out_sp_shape, out_dense, out_rg_val, out_rg_split;
} parse_state;

static void parse_release(void *p) {
  parse_state *st = p;
  if (!st) return;
  free(st->sparse_types);
  free(st->ragged_types);
  free(st->split_types);
  free(st->dense);
  free(st);
}

static sm_status *copy_types(const sm_node *node, const char *attr, int want, int **out) {
  *out = NULL;
  const int *t = NULL;
  size_t n = 0;
  if (sm__node_attr(node, attr)) {
    sm_status *s = sm__node_attr_types(node, attr, &t, &n);
    if (s) return s;
  }
  if (want >= 0 && (size_t)want != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr %s has %zu types, expected %d", attr, n, want);
  *out = malloc((n ? n : 1) * sizeof **out);
  if (!*out) return sm_status_new(SM_NO_MEMORY, "out of memory");
  if (n) memcpy(*out, t, n * sizeof *t);
  return NULL;
}

static int arg_start(const sm_node *node, int output, const char *arg, int *count) {
  int c = 0;
  int i = output ? sm__node_output_arg(node, arg, &c) : sm__node_input_arg(node, arg, &c);
  if (count) *count = i < 0 ? 0 : c;
  return i;
}

static sm_status *parse_prepare(const sm_node *node, void **state) {
  parse_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->v2 = strcmp(sm__node_op(node), "ParseExampleV2") == 0;
  sm_status *s = NULL;
  int64_t nsparse = 0, ndense = 0;
  int *tdense = NULL;
  if (st->v2) {
    s = sm__node_attr_int(node, "num_sparse", &nsparse);
    if (!s) s = copy_types(node, "Tdense", -1, &tdense);
  } else {
    s = sm__node_attr_int(node, "Nsparse", &nsparse);
    if (!s) s = sm__node_attr_int(node, "Ndense", &ndense);
  }
  if (s) goto fail;
  if (st->v2) {
    const int *t;
    size_t n = 0;
    if (sm__node_attr(node, "Tdense") && !(s = sm__node_attr_types(node, "Tdense", &t, &n))) ndense = (int64_t)n;
    if (s) goto fail;
  } else {
    s = copy_types(node, "Tdense", (int)ndense, &tdense);
    if (s) goto fail;
  }
  if (nsparse < 0 || ndense < 0 || nsparse > 100000 || ndense > 100000) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "bad feature counts (%lld sparse, %lld dense)", (long long)nsparse,
                      (long long)ndense);
    goto fail;
  }
  st->nsparse = (int)nsparse;
  st->ndense = (int)ndense;
  s = copy_types(node, "sparse_types", st->nsparse, &st->sparse_types);
  if (s) goto fail;
  if (st->v2) {
    s = copy_types(node, "ragged_value_types", -1, &st->ragged_types);
    if (!s) {
      const int *t;
      size_t n = 0;
      if (sm__node_attr(node, "ragged_value_types")) s = sm__node_attr_types(node, "ragged_value_types", &t, &n);
      st->nragged = (int)n;
    }
    if (!s) s = copy_types(node, "ragged_split_types", st->nragged, &st->split_types);
    if (s) goto fail;
  }
  for (int i = 0; i < st->nsparse; i++)
    if (kind_of_dtype(st->sparse_types[i]) < 0) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "sparse_types[%d] must be float, int64 or string", i);
      goto fail;
    }
  for (int i = 0; i < st->nragged; i++)
    if (kind_of_dtype(st->ragged_types[i]) < 0 || (st->split_types[i] != SM_INT32 && st->split_types[i] != SM_INT64)) {
      s = sm_status_new(SM_INVALID_ARGUMENT,
                        "ragged key %d: values must be float, int64 or string and splits "
                        "int32 or int64",
                        i);
      goto fail;
    }
  /* dense shapes */
  const Tensorflow__AttrValue *shapes = sm__node_attr(node, "dense_shapes");
  size_t nshapes = shapes && shapes->list ? shapes->list->n_shape : 0;
  if (nshapes != (size_t)st->ndense) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "%zu dense_shapes for %d dense keys", nshapes, st->ndense);
    goto fail;
  }
  st->dense = calloc((size_t)(st->ndense ? st->ndense : 1), sizeof *st->dense);
  if (!st->dense) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto fail;
  }
  for (int j = 0; j < st->ndense; j++) {
    dense_cfg *c = &st->dense[j];
    c->dtype = tdense[j];
    if (kind_of_dtype(c->dtype) < 0) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Tdense[%d] must be float, int64 or string", j);
      goto fail;
    }
    const Tensorflow__TensorShapeProto *sp = shapes->list->shape[j];
    if (!sp || sp->unknown_rank || sp->n_dim >= SM_MAX_RANK) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "dense_shapes[%d] must have a known rank below %d", j, SM_MAX_RANK);
      goto fail;
    }
    c->rank = (int)sp->n_dim;
    c->stride = 1;
    for (int d = 0; d < c->rank; d++) {
      int64_t v = sp->dim[d] ? sp->dim[d]->size : 0;
      c->dims[d] = v;
      if (d == 0 && v == -1) {
        c->varlen = 1;
        continue;
      }
      if (v < 0 || sm__mul_u64((uint64_t)c->stride, (uint64_t)v, (uint64_t *)&c->stride) || c->stride > (1ll << 40)) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "dense_shapes[%d] has a bad dimension %d (%lld)", j, d, (long long)v);
        goto fail;
      }
    }
  }
  int cnt;
  st->in_sparse_keys = arg_start(node, 0, "sparse_keys", &cnt);
  st->in_dense_keys = arg_start(node, 0, "dense_keys", &cnt);
  st->in_ragged_keys = arg_start(node, 0, "ragged_keys", &cnt);
  st->in_defaults = arg_start(node, 0, "dense_defaults", &cnt);
  if (cnt != st->ndense || st->in_dense_keys < 0 || (st->ndense && st->in_defaults < 0)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "%d dense_defaults inputs for %d dense keys", cnt, st->ndense);
    goto fail;
  }
  st->out_sp_idx = arg_start(node, 1, "sparse_indices", NULL);
  st->out_sp_val = arg_start(node, 1, "sparse_values", NULL);
  st->out_sp_shape = arg_start(node, 1, "sparse_shapes", NULL);
  st->out_dense = arg_start(node, 1, "dense_values", NULL);
  st->out_rg_val = arg_start(node, 1, "ragged_values", NULL);
  st->out_rg_split = arg_start(node, 1, "ragged_row_splits", NULL);
  if ((st->nsparse && (st->out_sp_idx < 0 || st->out_sp_val < 0 || st->out_sp_shape < 0)) ||
      (st->ndense && st->out_dense < 0) || (st->nragged && (st->out_rg_val < 0 || st->out_rg_split < 0))) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "the op's outputs do not match its attrs");
    goto fail;
  }
  free(tdense);
  *state = st;
  return NULL;
fail:
  free(tdense);
  parse_release(st);
  return s;
}

/* ---- compute -------------------------------------------------------------------------------- */

typedef struct {
  const char *p;
  size_t n;
  int cfg; /* CFG_* */
  int j;   /* index within its kind */
} key_ref;

static int key_cmp(const void *a, const void *b) {
  const key_ref *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  return memcmp(x->p, y->p, x->n);
}

typedef struct {
  const parse_state *st;
  sm_kctx *ctx;
  const sm_tensor *serialized, *names;
  int64_t batch; /* examples */
  int scalar;    /* serialized is a scalar (V2): no batch dim in outputs */
  int nkeys;
  key_ref *keys; /* sorted */
  slice *feats;  /* [batch][nkeys] in config order; p NULL = absent */
} parse_run;

static const char *example_name(const parse_run *r, int64_t b, size_t *len) {
  if (r->names && sm_tensor_num_elements(r->names) == r->batch) {
    const char *s = sm_tensor_string(r->names, b, len);
    if (*len) return s;
  }
  *len = 9;
  return "<unknown>";
}

#define KEYF(k) (int)((k)->n > 200 ? 200 : (k)->n), (k)->p

/* Gathers the key strings of one kind: V2 one 1-D input, V1 `count` scalar inputs. */
static sm_status *collect_keys(parse_run *r, int first_input, int count, int cfg, key_ref *out) {
  if (count == 0) return NULL;
  if (r->st->v2) {
    const sm_tensor *t = sm__kctx_input(r->ctx, first_input);
    if (!t || sm_tensor_dtype(t) != SM_STRING || sm_tensor_num_elements(t) != count)
      return sm_status_new(SM_INVALID_ARGUMENT, "expected %d %s keys in input %d", count,
                           cfg == CFG_DENSE    ? "dense"
                           : cfg == CFG_SPARSE ? "sparse"
                                               : "ragged",
                           first_input);
    for (int j = 0; j < count; j++) {
      out[j].p = sm_tensor_string(t, j, &out[j].n);
      out[j].cfg = cfg;
      out[j].j = j;
    }
    return NULL;
  }
  for (int j = 0; j < count; j++) {
    const sm_tensor *t = sm__kctx_input(r->ctx, first_input + j);
    if (!t || sm_tensor_dtype(t) != SM_STRING || sm_tensor_num_elements(t) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be a string scalar (a feature key)", first_input + j);
    out[j].p = sm_tensor_string(t, 0, &out[j].n);
    out[j].cfg = cfg;
    out[j].j = j;
  }
  return NULL;
}

static sm_status *bad_example(const parse_run *r, int64_t b) {
  size_t nl;
  const char *nm = example_name(r, b, &nl);
  return sm_status_new(SM_INVALID_ARGUMENT,
                       "Could not parse example input (Name: %.*s, Index: %lld: not a valid tf.Example)", (int)nl, nm,
                       (long long)b);
}

/* Walks one serialized Example and records each configured key's Feature (last entry wins). */
static sm_status *scan_example(parse_run *r, int64_t b) {
  size_t len;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(r->serialized, b, &len), *end = p + len;
  slice *row = r->feats + (size_t)b * (size_t)r->nkeys;
  while (p < end) {
    uint32_t f;
    int w;
    uint64_t v;
    slice features = {0, 0};
    if (!next_field(&p, end, &f, &w, &v, &features)) return bad_example(r, b);
    if (f != 1) continue;
    if (w != 2) return bad_example(r, b);
    const uint8_t *q = features.p, *qend = q + features.n;
    while (q < qend) {
      slice entry = {0, 0};
      if (!next_field(&q, qend, &f, &w, &v, &entry)) return bad_example(r, b);
      if (f != 1) continue;
      if (w != 2) return bad_example(r, b);
      key_ref key = {"", 0, 0, 0};
      slice value = {(const uint8_t *)"", 0};
      const uint8_t *e = entry.p, *eend = e + entry.n;
      while (e < eend) {
        slice sub = {0, 0};
        if (!next_field(&e, eend, &f, &w, &v, &sub)) return bad_example(r, b);
        if ((f == 1 || f == 2) && w != 2) return bad_example(r, b);
        if (f == 1) {
          key.p = (const char *)sub.p;
          key.n = sub.n;
        } else if (f == 2) {
          value = sub;
        }
      }
      /* binary search for the first equal key, then every equal one */
      int lo = 0, hi = r->nkeys;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (key_cmp(&r->keys[mid], &key) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (int k = lo; k < r->nkeys && !key_cmp(&r->keys[k], &key); k++) {
        const key_ref *kr = &r->keys[k];
        int col = kr->cfg == CFG_DENSE    ? kr->j
                  : kr->cfg == CFG_SPARSE ? r->st->ndense + kr->j
                                          : r->st->ndense + r->st->nsparse + kr->j;
        row[col] = value;
      }
    }
  }
  return NULL;
}

/* Kind and count of example b's feature in column col; kind NONE when absent or empty. */
static sm_status *feat_info(const parse_run *r, int64_t b, int col, const key_ref *key, int want_dtype, int *kind,
                            int64_t *count) {
  slice f = r->feats[(size_t)b * (size_t)r->nkeys + (size_t)col];
  *kind = KIND_NONE;
  *count = 0;
  if (!f.p) return NULL;
  if (!feature_scan(f, kind, count)) return bad_example(r, b);
  if (*kind != KIND_NONE && *kind != kind_of_dtype(want_dtype)) {
    size_t nl;
    const char *nm = example_name(r, b, &nl);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Name: %.*s, Key: %.*s, Index: %lld.  Data types don't match. "
                         "Data type: %s but expected type: %s",
                         (int)nl, nm, KEYF(key), (long long)b, kind_name(*kind), kind_name(kind_of_dtype(want_dtype)));
  }
  return NULL;
}

/* Fills elements [at, at + n) of out with the default (one value repeated, or the first n values
 * of a default of n values). */
static sm_status *fill_default(sm_tensor *out, int64_t at, int64_t n, const sm_tensor *dflt) {
  int64_t dn = sm_tensor_num_elements(dflt);
  int dtype = sm_tensor_dtype(out);
  if (dn == 0) return NULL; /* zeros / empty strings are already there */
  for (int64_t i = 0; i < n; i++) {
    int64_t di = dn == 1 ? 0 : i;
    if (dtype == SM_STRING) {
      size_t len;
      const char *s = sm_tensor_string(dflt, di, &len);
      sm_status *st = sm_tensor_set_string(out, at + i, s, len);
      if (st) return st;
    } else {
      size_t es = sm_dtype_size(dtype);
      memcpy((char *)sm_tensor_data(out) + (size_t)(at + i) * es, (const char *)sm_tensor_data(dflt) + (size_t)di * es,
             es);
    }
  }
  return NULL;
}

static sm_status *do_dense(parse_run *r, int j, const key_ref *key) {
  const parse_state *st = r->st;
  const dense_cfg *c = &st->dense[j];
  const sm_tensor *dflt = sm__kctx_input(r->ctx, st->in_defaults + j);
  char sb[128];
  if (!dflt || sm_tensor_dtype(dflt) != c->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "dense_defaults[%d] must be %s", j, sm_dtype_name(c->dtype));
  int64_t dn = sm_tensor_num_elements(dflt);
  if (!c->varlen && dn != 0 && dn != c->stride && dn != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "dense_defaults[%d] for key %.*s has %lld values, shape %s needs %lld", j,
                         KEYF(key), (long long)dn, sm_shape_str(c->rank, c->dims, sb, sizeof sb), (long long)c->stride);
  if (c->varlen && dn > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "dense_defaults[%d] for variable-length key %.*s must be a scalar", j,
                         KEYF(key));
  /* rows per example: fixed 1 block, or the batch maximum for variable length */
  int64_t max_rows = 0;
  for (int64_t b = 0; b < r->batch; b++) {
    int kind;
    int64_t n;
    sm_status *s = feat_info(r, b, j, key, c->dtype, &kind, &n);
    if (s) return s;
    size_t nl;
    const char *nm = example_name(r, b, &nl);
    if (c->varlen) {
      if (kind == KIND_NONE) continue;
      if (c->stride == 0 ? n != 0 : n % c->stride)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Name: %.*s, Key: %.*s, Index: %lld.  Number of values "
                             "(%lld) is not a multiple of stride %lld",
                             (int)nl, nm, KEYF(key), (long long)b, (long long)n, (long long)c->stride);
      int64_t rows = c->stride ? n / c->stride : 0;
      if (rows > max_rows) max_rows = rows;
    } else if (kind == KIND_NONE) {
      if (dn == 0) {
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Name: %.*s, Feature: %.*s (data type: %s) is required but "
                             "could not be found. (Index: %lld)",
                             (int)nl, nm, KEYF(key), kind_name(kind_of_dtype(c->dtype)), (long long)b);
      }
    } else if (n != c->stride) {
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Name: %.*s, Key: %.*s, Index: %lld.  Number of %s values != "
                           "expected.  Values size: %lld but output shape: %s",
                           (int)nl, nm, KEYF(key), (long long)b, kind_name(kind), (long long)n,
                           sm_shape_str(c->rank, c->dims, sb, sizeof sb));
    }
  }
  int64_t dims[SM_MAX_RANK];
  int rank = 0;
  if (!r->scalar) dims[rank++] = r->batch;
  for (int d = 0; d < c->rank; d++) dims[rank++] = d == 0 && c->varlen ? max_rows : c->dims[d];
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(r->ctx, st->out_dense + j, c->dtype, rank, dims, &out);
  if (s) return s;
  int64_t per = c->varlen ? max_rows * c->stride : c->stride;
  for (int64_t b = 0; b < r->batch && !s; b++) {
    int kind;
    int64_t n;
    s = feat_info(r, b, j, key, c->dtype, &kind, &n);
    if (s) break;
    int64_t at = b * per;
    if (kind != KIND_NONE)
      s = feature_copy(r->feats[(size_t)b * (size_t)r->nkeys + (size_t)j], kind, out, at);
    else
      n = 0;
    if (!s && n < per) s = fill_default(out, at + n, per - n, dflt);
  }
  return s;
}

static sm_status *do_sparse_or_ragged(parse_run *r, int j, int ragged, const key_ref *key) {
  const parse_state *st = r->st;
  int col = st->ndense + (ragged ? st->nsparse : 0) + j;
  int dtype = ragged ? st->ragged_types[j] : st->sparse_types[j];
  int64_t total = 0, max_count = 0;
  for (int64_t b = 0; b < r->batch; b++) {
    int kind;
    int64_t n;
    sm_status *s = feat_info(r, b, col, key, dtype, &kind, &n);
    if (s) return s;
    if (sm__add_u64((uint64_t)total, (uint64_t)n, (uint64_t *)&total) || total > (1ll << 40))
      return sm_status_new(SM_OUT_OF_RANGE, "too many values for key %.*s", KEYF(key));
    if (n > max_count) max_count = n;
  }
  sm_tensor *values;
  int out_val = ragged ? st->out_rg_val + j : st->out_sp_val + j;
  sm_status *s = sm__kctx_alloc_output(r->ctx, out_val, dtype, 1, &total, &values);
  if (s) return s;
  sm_tensor *indices = NULL, *splits = NULL;
  int irank = r->scalar ? 1 : 2;
  if (ragged) {
    /* a scalar input has no rows: TF gives empty row_splits and the values alone */
    int64_t ns = r->scalar ? 0 : r->batch + 1;
    s = sm__kctx_alloc_output(r->ctx, st->out_rg_split + j, st->split_types[j], 1, &ns, &splits);
  } else {
    int64_t idims[2] = {total, irank};
    s = sm__kctx_alloc_output(r->ctx, st->out_sp_idx + j, SM_INT64, 2, idims, &indices);
    if (!s) {
      sm_tensor *shape;
      int64_t sr = irank;
      s = sm__kctx_alloc_output(r->ctx, st->out_sp_shape + j, SM_INT64, 1, &sr, &shape);
      if (!s) {
        int64_t *sd = sm_tensor_data(shape);
        if (r->scalar) {
          sd[0] = max_count;
        } else {
          sd[0] = r->batch;
          sd[1] = max_count;
        }
      }
    }
  }
  int64_t at = 0;
  for (int64_t b = 0; b < r->batch && !s; b++) {
    int kind;
    int64_t n;
    s = feat_info(r, b, col, key, dtype, &kind, &n);
    if (s) break;
    if (kind != KIND_NONE && n)
      s = feature_copy(r->feats[(size_t)b * (size_t)r->nkeys + (size_t)col], kind, values, at);
    if (indices) {
      int64_t *id = sm_tensor_data(indices);
      for (int64_t i = 0; i < n; i++) {
        if (r->scalar) {
          id[at + i] = i;
        } else {
          id[2 * (at + i)] = b;
          id[2 * (at + i) + 1] = i;
        }
      }
    }
    at += n;
    if (splits && !r->scalar) {
      if (st->split_types[j] == SM_INT32) {
        if (at > INT32_MAX) {
          s = sm_status_new(SM_OUT_OF_RANGE, "ragged key %.*s has more values than int32 splits hold", KEYF(key));
          break;
        }
        ((int32_t *)sm_tensor_data(splits))[b + 1] = (int32_t)at;
      } else {
        ((int64_t *)sm_tensor_data(splits))[b + 1] = at;
      }
    }
  }
  return s;
}

static sm_status *parse_compute(const void *state, sm_kctx *ctx) {
  const parse_state *st = state;
  parse_run r = {0};
  r.st = st;
  r.ctx = ctx;
  r.serialized = sm__kctx_input(ctx, 0);
  r.names = sm__kctx_input(ctx, 1);
  if (!r.serialized || sm_tensor_dtype(r.serialized) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "serialized must be a string tensor");
  int srank = sm_tensor_rank(r.serialized);
  if (srank > 1 || (!st->v2 && srank != 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "expected serialized to be a %s, got rank %d",
                         st->v2 ? "scalar or vector" : "vector", srank);
  r.scalar = srank == 0;
  r.batch = sm_tensor_num_elements(r.serialized);
  if (r.names && sm_tensor_dtype(r.names) == SM_STRING && sm_tensor_num_elements(r.names) != 0 &&
      sm_tensor_num_elements(r.names) != r.batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "names has %lld entries for %lld serialized examples",
                         (long long)sm_tensor_num_elements(r.names), (long long)r.batch);
  if (r.names && sm_tensor_dtype(r.names) != SM_STRING) r.names = NULL;
  r.nkeys = st->ndense + st->nsparse + st->nragged;
  size_t cells;
  sm_status *s = NULL;
  if (sm__mul_size((size_t)r.batch, (size_t)r.nkeys, &cells) || cells > ((size_t)1 << 32))
    return sm_status_new(SM_OUT_OF_RANGE, "%lld examples x %d keys is too many", (long long)r.batch, r.nkeys);
  /* scratch, zeroed; released by the context whatever the outcome */
  key_ref *cfg_keys = sm__kctx_scratch(ctx, (size_t)r.nkeys * sizeof *cfg_keys, &s);
  if (cfg_keys) r.keys = sm__kctx_scratch(ctx, (size_t)r.nkeys * sizeof *r.keys, &s);
  if (r.keys) r.feats = sm__kctx_scratch(ctx, cells * sizeof *r.feats, &s);
  if (!r.feats) return s;
  memset(cfg_keys, 0, (size_t)r.nkeys * sizeof *cfg_keys);
  memset(r.keys, 0, (size_t)r.nkeys * sizeof *r.keys);
  memset(r.feats, 0, cells * sizeof *r.feats);
  s = collect_keys(&r, st->in_dense_keys, st->ndense, CFG_DENSE, cfg_keys);
  if (!s) s = collect_keys(&r, st->in_sparse_keys, st->nsparse, CFG_SPARSE, cfg_keys + st->ndense);
  if (!s) s = collect_keys(&r, st->in_ragged_keys, st->nragged, CFG_RAGGED, cfg_keys + st->ndense + st->nsparse);
  if (!s) {
    memcpy(r.keys, cfg_keys, (size_t)r.nkeys * sizeof *r.keys);
    qsort(r.keys, (size_t)r.nkeys, sizeof *r.keys, key_cmp);
  }
  for (int64_t b = 0; b < r.batch && !s; b++) s = scan_example(&r, b);
  for (int j = 0; j < st->ndense && !s; j++) s = do_dense(&r, j, &cfg_keys[j]);
  for (int j = 0; j < st->nsparse && !s; j++) s = do_sparse_or_ragged(&r, j, 0, &cfg_keys[st->ndense + j]);
  for (int j = 0; j < st->nragged && !s; j++)
    s = do_sparse_or_ragged(&r, j, 1, &cfg_keys[st->ndense + st->nsparse + j]);
  sm__kctx_scratch_free(ctx, cfg_keys);
  sm__kctx_scratch_free(ctx, r.keys);
  sm__kctx_scratch_free(ctx, r.feats);
  return s;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_parsing[] = {
    {"ParseExample", parse_prepare, parse_compute, parse_release, 0},
    {"ParseExampleV2", parse_prepare, parse_compute, parse_release, 0},
    {0},
};
