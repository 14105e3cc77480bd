/* parsing.c - the parsing kernel family: ParseExample, ParseExampleV2 and ParseSingleExample (a
 * scalar input, keys and dense shapes as attrs, TF's messages for that op) over serialized
 * tf.Example, and the SequenceExample parsers (ParseSequenceExampleV2, ParseSequenceExample,
 * ParseSingleSequenceExample: see the section below) whose context goes through the same code.
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
/* Where an op's keys are: one scalar input each (ParseExample, ParseSingleSequenceExample), one
 * vector input per kind (the V2 ops), attrs (ParseSingleExample, ParseSequenceExample). */
enum { KEYS_SCALARS = 0, KEYS_VECTOR = 1, KEYS_ATTRS = 2 };

typedef struct {
  int dtype;
  int rank; /* of the per-example shape */
  int64_t dims[SM_MAX_RANK];
  int varlen;     /* dims[0] == -1 */
  int64_t stride; /* elements per example (fixed) or per row (variable length) */
} dense_cfg;

typedef struct {
  int v2;     /* ParseExampleV2's kinds of config (and ParseSingleExample's, ParseSequenceExampleV2's context) */
  int single; /* ParseSingleExample: a scalar input, keys from attrs, its messages */
  int keys_from; /* KEYS_* */
  int seq;    /* ParseSequenceExampleV2's context: its messages */
  int nsparse, ndense, nragged;
  int *sparse_types, *ragged_types, *split_types;
  dense_cfg *dense;
  /* ParseSingleExample's keys (copies of its attrs): [0] dense, [1] sparse */
  char **attr_keys[2];
  size_t *attr_key_lens[2];
  /* flat input / output indices of each arg's first element */
  int in_names; /* -1: none (ParseSingleExample) */
  int in_sparse_keys, in_dense_keys, in_ragged_keys, in_defaults;
  int out_sp_idx, out_sp_val, out_sp_shape, out_dense, out_rg_val, out_rg_split;
} parse_state;

/* The attr and arg names one op of the family uses for its (context) Example config. */
typedef struct {
  const char *num_sparse, *sparse_types, *tdense, *dense_shapes, *ragged_value_types, *ragged_split_types;
  const char *names, *sparse_keys, *dense_keys, *ragged_keys, *defaults;
  const char *sp_idx, *sp_val, *sp_shape, *dense, *rg_val, *rg_split;
} parse_names;

static const parse_names V2_NAMES = {"num_sparse", "sparse_types", "Tdense", "dense_shapes", "ragged_value_types",
                                     "ragged_split_types", "names", "sparse_keys", "dense_keys", "ragged_keys", "dense_defaults",
                                     "sparse_indices", "sparse_values", "sparse_shapes", "dense_values", "ragged_values",
                                     "ragged_row_splits"};

static void parse_release(void *p) {
  parse_state *st = p;
  if (!st) return;
  for (int k = 0; k < 2; k++) {
    int n = k == 0 ? st->ndense : st->nsparse;
    for (int i = 0; st->attr_keys[k] && i < n; i++) free(st->attr_keys[k][i]);
    free(st->attr_keys[k]);
    free(st->attr_key_lens[k]);
  }
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

/* Reads the Example config of `node` under the names nm (V1 ParseExample: fixed names). */
static sm_status *parse_prepare_names(const sm_node *node, int v2, int single, int keys_from, const parse_names *nm,
                                      parse_state **state) {
  parse_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->v2 = v2;
  st->single = single;
  st->keys_from = keys_from >= 0 ? keys_from : single ? KEYS_ATTRS : v2 ? KEYS_VECTOR : KEYS_SCALARS;
  sm_status *s = NULL;
  int64_t nsparse = 0, ndense = 0;
  int *tdense = NULL;
  if (st->v2) {
    if (sm__node_attr(node, nm->num_sparse)) s = sm__node_attr_int(node, nm->num_sparse, &nsparse);
    if (!s) s = copy_types(node, nm->tdense, -1, &tdense);
  } else {
    s = sm__node_attr_int(node, "Nsparse", &nsparse);
    if (!s) s = sm__node_attr_int(node, "Ndense", &ndense);
  }
  if (s) goto fail;
  if (st->v2) {
    const int *t;
    size_t n = 0;
    if (sm__node_attr(node, nm->tdense) && !(s = sm__node_attr_types(node, nm->tdense, &t, &n))) ndense = (int64_t)n;
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
  s = copy_types(node, nm->sparse_types, st->nsparse, &st->sparse_types);
  if (s) goto fail;
  if (st->v2 && nm->ragged_value_types) {
    s = copy_types(node, nm->ragged_value_types, -1, &st->ragged_types);
    if (!s) {
      const int *t;
      size_t n = 0;
      if (sm__node_attr(node, nm->ragged_value_types)) s = sm__node_attr_types(node, nm->ragged_value_types, &t, &n);
      st->nragged = (int)n;
    }
    if (!s) s = copy_types(node, nm->ragged_split_types, st->nragged, &st->split_types);
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
  const Tensorflow__AttrValue *shapes = sm__node_attr(node, nm->dense_shapes);
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
  st->in_sparse_keys = arg_start(node, 0, nm->sparse_keys, &cnt);
  st->in_dense_keys = arg_start(node, 0, nm->dense_keys, &cnt);
  st->in_ragged_keys = nm->ragged_keys ? arg_start(node, 0, nm->ragged_keys, &cnt) : -1;
  st->in_defaults = arg_start(node, 0, nm->defaults, &cnt);
  st->in_names = arg_start(node, 0, nm->names, NULL);
  if (cnt != st->ndense || (st->in_dense_keys < 0 && st->keys_from != KEYS_ATTRS) || (st->ndense && st->in_defaults < 0)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "%d dense_defaults inputs for %d dense keys", cnt, st->ndense);
    goto fail;
  }
  st->out_sp_idx = arg_start(node, 1, nm->sp_idx, NULL);
  st->out_sp_val = arg_start(node, 1, nm->sp_val, NULL);
  st->out_sp_shape = arg_start(node, 1, nm->sp_shape, NULL);
  st->out_dense = arg_start(node, 1, nm->dense, NULL);
  st->out_rg_val = nm->rg_val ? arg_start(node, 1, nm->rg_val, NULL) : -1;
  st->out_rg_split = nm->rg_split ? arg_start(node, 1, nm->rg_split, NULL) : -1;
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

/* Copies a list(string) attr of want keys into *keys / *lens (freed by parse_release's way). */
static sm_status *copy_attr_strings(const sm_node *node, const char *attr, int want, char ***keys, size_t **lens) {
  const ProtobufCBinaryData *v = NULL;
  size_t n = 0;
  sm_status *s = NULL;
  if (sm__node_attr(node, attr)) s = sm__node_attr_strings(node, attr, &v, &n);
  if (!s && want >= 0 && n != (size_t)want)
    s = sm_status_new(SM_INVALID_ARGUMENT, "attr %s has %zu keys, expected %d", attr, n, want);
  if (s) return s;
  *keys = calloc(n ? n : 1, sizeof(char *));
  *lens = calloc(n ? n : 1, sizeof(size_t));
  if (!*keys || !*lens) return sm_status_new(SM_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n; i++) {
    (*keys)[i] = malloc(v[i].len + 1);
    if (!(*keys)[i]) return sm_status_new(SM_NO_MEMORY, "out of memory");
    if (v[i].len) memcpy((*keys)[i], v[i].data, v[i].len);
    (*lens)[i] = v[i].len;
  }
  return NULL;
}

static sm_status *parse_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int single = strcmp(op, "ParseSingleExample") == 0;
  parse_state *st = NULL;
  sm_status *s = parse_prepare_names(node, single || strcmp(op, "ParseExampleV2") == 0, single, -1, &V2_NAMES, &st);
  if (s || !single) {
    *state = st;
    return s;
  }
  /* ParseSingleExample: the keys are attrs; copy them */
  for (int k = 0; k < 2 && !s; k++) {
    const char *attr = k == 0 ? "dense_keys" : "sparse_keys";
    int want = k == 0 ? st->ndense : st->nsparse;
    const ProtobufCBinaryData *v = NULL;
    size_t n = 0;
    if (sm__node_attr(node, attr)) s = sm__node_attr_strings(node, attr, &v, &n);
    if (!s && n != (size_t)want)
      s = sm_status_new(SM_INVALID_ARGUMENT, "len(%s) != %s (%zu vs %d)", attr, k == 0 ? "len(dense_defaults)" : "num_sparse", n, want);
    if (s) break;
    st->attr_keys[k] = calloc(n ? n : 1, sizeof(char *));
    st->attr_key_lens[k] = calloc(n ? n : 1, sizeof(size_t));
    if (!st->attr_keys[k] || !st->attr_key_lens[k]) s = sm_status_new(SM_NO_MEMORY, "out of memory");
    for (size_t i = 0; !s && i < n; i++) {
      st->attr_keys[k][i] = malloc(v[i].len + 1);
      if (!st->attr_keys[k][i]) {
        s = sm_status_new(SM_NO_MEMORY, "out of memory");
        break;
      }
      if (v[i].len) memcpy(st->attr_keys[k][i], v[i].data, v[i].len);
      st->attr_key_lens[k][i] = v[i].len;
    }
  }
  if (s) {
    parse_release(st);
    return s;
  }
  *state = st;
  return NULL;
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
  if (r->st->keys_from == KEYS_ATTRS) {
    int k = cfg == CFG_DENSE ? 0 : 1;
    for (int j = 0; j < count; j++) {
      out[j].p = r->st->attr_keys[k][j];
      out[j].n = r->st->attr_key_lens[k][j];
      out[j].cfg = cfg;
      out[j].j = j;
    }
    return NULL;
  }
  if (r->st->keys_from == KEYS_VECTOR) {
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
  if (r->st->seq) {
    size_t nl;
    const char *nm = example_name(r, b, &nl);
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid protocol message input, example id: %.*s", (int)nl, nm);
  }
  if (r->st->single) { /* TF prints the bytes; the first 100 here */
    size_t len;
    const char *p = sm_tensor_string(r->serialized, b, &len);
    return sm_status_new(SM_INVALID_ARGUMENT, "Could not parse example input, value: '%.*s'", (int)(len < 100 ? len : 100), p);
  }
  size_t nl;
  const char *nm = example_name(r, b, &nl);
  return sm_status_new(SM_INVALID_ARGUMENT,
                       "Could not parse example input (Name: %.*s, Index: %lld: not a valid tf.Example)", (int)nl, nm,
                       (long long)b);
}

/* Walks a message's map<string, bytes> field `field` (Example.features = 1, SequenceExample.feature_lists
 * = 2: each a message whose field 1 holds the map entries) and stores every entry whose key is one of the
 * sorted keys at row[its column]: dense keys first, then sparse, then ragged (the last entry of a key
 * wins). 0 on malformed bytes. */
static int scan_map(const uint8_t *p, const uint8_t *end, uint32_t field, const key_ref *keys, int nkeys, int ndense,
                    int nsparse, slice *row) {
  while (p < end) {
    uint32_t f;
    int w;
    uint64_t v;
    slice features = {0, 0};
    if (!next_field(&p, end, &f, &w, &v, &features)) return 0;
    if (f != field) continue;
    if (w != 2) return 0;
    const uint8_t *q = features.p, *qend = q + features.n;
    while (q < qend) {
      slice entry = {0, 0};
      if (!next_field(&q, qend, &f, &w, &v, &entry)) return 0;
      if (f != 1) continue;
      if (w != 2) return 0;
      key_ref key = {"", 0, 0, 0};
      slice value = {(const uint8_t *)"", 0};
      const uint8_t *e = entry.p, *eend = e + entry.n;
      while (e < eend) {
        slice sub = {0, 0};
        if (!next_field(&e, eend, &f, &w, &v, &sub)) return 0;
        if ((f == 1 || f == 2) && w != 2) return 0;
        if (f == 1) {
          key.p = (const char *)sub.p;
          key.n = sub.n;
        } else if (f == 2) {
          value = sub;
        }
      }
      /* binary search for the first equal key, then every equal one */
      int lo = 0, hi = nkeys;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (key_cmp(&keys[mid], &key) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (int k = lo; k < nkeys && !key_cmp(&keys[k], &key); k++) {
        const key_ref *kr = &keys[k];
        int col = kr->cfg == CFG_DENSE ? kr->j : kr->cfg == CFG_SPARSE ? ndense + kr->j : ndense + nsparse + kr->j;
        row[col] = value;
      }
    }
  }
  return 1;
}

/* Walks one serialized Example and records each configured key's Feature (last entry wins). */
static sm_status *scan_example(parse_run *r, int64_t b) {
  size_t len;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(r->serialized, b, &len);
  slice *row = r->feats + (size_t)b * (size_t)r->nkeys;
  if (!scan_map(p, p + len, 1, r->keys, r->nkeys, (int)r->st->ndense, (int)r->st->nsparse, row)) return bad_example(r, b);
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
    if (r->st->seq) {
      size_t nl;
      const char *nm = example_name(r, b, &nl);
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Name: %.*s, Context feature: %.*s.  Data types don't match. Expected type: %s, Actual type: %s",
                           (int)nl, nm, KEYF(key), kind_name(kind_of_dtype(want_dtype)), kind_name(*kind));
    }
    if (r->st->single)
      return sm_status_new(SM_INVALID_ARGUMENT, "Key: %.*s.  Data types don't match. Data type: %s but expected type: %s",
                           KEYF(key), kind_name(*kind), kind_name(kind_of_dtype(want_dtype)));
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
  if (st->single && !c->varlen && dn != 0 &&
      (sm_tensor_rank(dflt) != c->rank || memcmp(sm_tensor_dims(dflt), c->dims, (size_t)c->rank * sizeof(int64_t)))) {
    char db[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "def_value[%d].shape() == %s is not compatible with dense_shapes_[%d] == %s", j,
                         sm_shape_str(sm_tensor_rank(dflt), sm_tensor_dims(dflt), db, sizeof db), j,
                         sm_shape_str(c->rank, c->dims, sb, sizeof sb));
  }
  if (c->varlen && dn > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "dense_defaults[%d] for variable-length key %.*s must be a scalar", j,
                         KEYF(key));
  if (st->seq && !c->varlen) { /* TF's check for a SequenceExample's context: the largest count */
    int64_t mx = dn;
    for (int64_t b = 0; b < r->batch; b++) {
      int kind;
      int64_t n;
      sm_status *s = feat_info(r, b, j, key, c->dtype, &kind, &n);
      if (s) return s;
      if (n > mx) mx = n;
    }
    if (mx != c->stride)
      return sm_status_new(SM_INVALID_ARGUMENT, "Inconsistent max number of elements for feature %.*s: expected %lld, but found %lld",
                           KEYF(key), (long long)c->stride, (long long)mx);
  }
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
      if (st->single)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Key: %.*s.  Can't parse serialized Example: %s", KEYF(key),
                             kind == KIND_BYTES   ? "Parsing bytes_list failed."
                             : kind == KIND_FLOAT ? "Some float_list slice was not parsed."
                                                  : "Some int64_list slice was not parsed.");
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
  r.names = st->in_names >= 0 ? sm__kctx_input(ctx, st->in_names) : NULL;
  if (!r.serialized || sm_tensor_dtype(r.serialized) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "serialized must be a string tensor");
  int srank = sm_tensor_rank(r.serialized);
  char sb[64];
  if (st->single && srank != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected serialized to be a scalar, got shape: %s",
                         sm_shape_str(srank, sm_tensor_dims(r.serialized), sb, sizeof sb));
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

/* ---- ParseSequenceExampleV2 (and V1 ParseSequenceExample: keys as attrs; ParseSingleSequenceExample:
 * a scalar input, keys as scalar inputs, no ragged keys and no lengths output) --------------------
 * A SequenceExample is {context=1: Features, feature_lists=2: FeatureLists{feature_list=1: map
 * entry {key=1, value=2: FeatureList{feature=1: repeated Feature}}}}. The context is an Example's
 * Features (field 1 both), so it runs through the code above with the op's context names. Feature
 * lists: dense keys give [batch] + [max steps] + shape padded with zeros / "" and the step counts
 * (a key absent from an example is an error unless feature_list_dense_missing_assumed_empty says
 * otherwise); sparse keys (indices [n, 3]: example, step, value), shape [batch, max steps, max
 * values]; ragged keys values + outer splits (steps per example) + inner splits (values per step).
 * A scalar input drops the batch dimension (its ragged outer splits are a scalar: the step count;
 * TF leaves that scalar unset). */

enum { FL_DENSE = 0, FL_SPARSE = 1, FL_RAGGED = 2 };

static const parse_names SEQ_CTX_NAMES = {
    "Ncontext_sparse", "context_sparse_types", "Tcontext_dense", "context_dense_shapes", "context_ragged_value_types",
    "context_ragged_split_types", "debug_name", "context_sparse_keys", "context_dense_keys", "context_ragged_keys",
    "context_dense_defaults", "context_sparse_indices", "context_sparse_values", "context_sparse_shapes",
    "context_dense_values", "context_ragged_values", "context_ragged_row_splits"};

enum { SEQ_V2 = 0, SEQ_V1 = 1, SEQ_SINGLE = 2 };

typedef struct {
  parse_state *ctx;
  int variant; /* SEQ_*: ParseSequenceExampleV2, ParseSequenceExample, ParseSingleSequenceExample */
  char **attr_keys[2];     /* SEQ_V1's feature list keys: [FL_DENSE], [FL_SPARSE] */
  size_t *attr_key_lens[2];
  char **missing_keys;     /* SEQ_V1's feature_list_dense_missing_assumed_empty */
  size_t *missing_lens;
  int nmissing;
  int nsparse, ndense, nragged;
  int *sparse_types, *dense_types, *ragged_types, *split_types;
  dense_cfg *dense; /* the shape of one step */
  int in_keys[3], in_missing;
  int out_sp_idx, out_sp_val, out_sp_shape, out_dense, out_len, out_rg_val, out_rg_outer, out_rg_inner;
} seq_state;

static void seq_release(void *p) {
  seq_state *st = p;
  if (!st) return;
  parse_release(st->ctx);
  for (int k = 0; k < 2; k++) {
    int n = k == FL_DENSE ? st->ndense : st->nsparse;
    for (int i = 0; st->attr_keys[k] && i < n; i++) free(st->attr_keys[k][i]);
    free(st->attr_keys[k]);
    free(st->attr_key_lens[k]);
  }
  for (int i = 0; st->missing_keys && i < st->nmissing; i++) free(st->missing_keys[i]);
  free(st->missing_keys);
  free(st->missing_lens);
  free(st->sparse_types);
  free(st->dense_types);
  free(st->ragged_types);
  free(st->split_types);
  free(st->dense);
  free(st);
}

static sm_status *seq_prepare(const sm_node *node, void **state) {
  seq_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  st->variant = !strcmp(op, "ParseSequenceExample") ? SEQ_V1 : !strcmp(op, "ParseSingleSequenceExample") ? SEQ_SINGLE : SEQ_V2;
  sm_status *s = parse_prepare_names(node, 1, 0,
                                     st->variant == SEQ_V1       ? KEYS_ATTRS
                                     : st->variant == SEQ_SINGLE ? KEYS_SCALARS
                                                                 : KEYS_VECTOR,
                                     &SEQ_CTX_NAMES, &st->ctx);
  if (!s) st->ctx->seq = 1;
  if (!s && st->variant == SEQ_V1) {
    s = copy_attr_strings(node, "context_dense_keys", st->ctx->ndense, &st->ctx->attr_keys[0], &st->ctx->attr_key_lens[0]);
    if (!s) s = copy_attr_strings(node, "context_sparse_keys", st->ctx->nsparse, &st->ctx->attr_keys[1], &st->ctx->attr_key_lens[1]);
  }
  int64_t nsp = 0, nde = 0;
  if (!s && sm__node_attr(node, "Nfeature_list_sparse")) s = sm__node_attr_int(node, "Nfeature_list_sparse", &nsp);
  if (!s && sm__node_attr(node, "Nfeature_list_dense")) s = sm__node_attr_int(node, "Nfeature_list_dense", &nde);
  if (!s && (nsp < 0 || nde < 0 || nsp > 100000 || nde > 100000))
    s = sm_status_new(SM_INVALID_ARGUMENT, "bad feature list counts (%lld sparse, %lld dense)", (long long)nsp, (long long)nde);
  if (s) goto fail;
  st->nsparse = (int)nsp, st->ndense = (int)nde;
  s = copy_types(node, "feature_list_sparse_types", st->nsparse, &st->sparse_types);
  if (!s) s = copy_types(node, "feature_list_dense_types", st->ndense, &st->dense_types);
  if (!s) s = copy_types(node, "feature_list_ragged_value_types", -1, &st->ragged_types);
  if (!s) {
    const int *t;
    size_t n = 0;
    if (sm__node_attr(node, "feature_list_ragged_value_types"))
      s = sm__node_attr_types(node, "feature_list_ragged_value_types", &t, &n);
    st->nragged = (int)n;
  }
  if (!s) s = copy_types(node, "feature_list_ragged_split_types", st->nragged, &st->split_types);
  if (s) goto fail;
  for (int i = 0; i < st->nsparse && !s; i++)
    if (kind_of_dtype(st->sparse_types[i]) < 0)
      s = sm_status_new(SM_INVALID_ARGUMENT, "feature_list_sparse_types[%d] must be float, int64 or string", i);
  for (int i = 0; i < st->nragged && !s; i++)
    if (kind_of_dtype(st->ragged_types[i]) < 0 || (st->split_types[i] != SM_INT32 && st->split_types[i] != SM_INT64))
      s = sm_status_new(SM_INVALID_ARGUMENT,
                        "feature list ragged key %d: values must be float, int64 or string and splits int32 or int64", i);
  if (s) goto fail;
  const Tensorflow__AttrValue *shapes = sm__node_attr(node, "feature_list_dense_shapes");
  size_t nshapes = shapes && shapes->list ? shapes->list->n_shape : 0;
  if (nshapes != (size_t)st->ndense) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "%zu feature_list_dense_shapes for %d dense feature lists", nshapes, st->ndense);
    goto fail;
  }
  st->dense = calloc((size_t)(st->ndense ? st->ndense : 1), sizeof *st->dense);
  if (!st->dense) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto fail;
  }
  for (int j = 0; j < st->ndense; j++) {
    dense_cfg *c = &st->dense[j];
    c->dtype = st->dense_types[j];
    const Tensorflow__TensorShapeProto *sp = shapes->list->shape[j];
    if (kind_of_dtype(c->dtype) < 0 || !sp || sp->unknown_rank || sp->n_dim + 2 > SM_MAX_RANK) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "feature list dense key %d: float, int64 or string of a known shape of rank < %d",
                        j, SM_MAX_RANK - 1);
      goto fail;
    }
    c->rank = (int)sp->n_dim;
    c->stride = 1;
    for (int d = 0; d < c->rank; d++) {
      int64_t v = sp->dim[d] ? sp->dim[d]->size : 0;
      c->dims[d] = v;
      if (v < 0 || sm__mul_u64((uint64_t)c->stride, (uint64_t)v, (uint64_t *)&c->stride) || c->stride > (1ll << 40)) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "feature_list_dense_shapes[%d] has a bad dimension %d (%lld)", j, d,
                          (long long)v);
        goto fail;
      }
    }
  }
  st->in_keys[FL_DENSE] = arg_start(node, 0, "feature_list_dense_keys", NULL);
  st->in_keys[FL_SPARSE] = arg_start(node, 0, "feature_list_sparse_keys", NULL);
  st->in_keys[FL_RAGGED] = arg_start(node, 0, "feature_list_ragged_keys", NULL);
  st->in_missing = arg_start(node, 0, "feature_list_dense_missing_assumed_empty", NULL);
  if (st->variant == SEQ_V1) {
    s = copy_attr_strings(node, "feature_list_dense_keys", st->ndense, &st->attr_keys[FL_DENSE], &st->attr_key_lens[FL_DENSE]);
    if (!s)
      s = copy_attr_strings(node, "feature_list_sparse_keys", st->nsparse, &st->attr_keys[FL_SPARSE], &st->attr_key_lens[FL_SPARSE]);
    if (!s) {
      const Tensorflow__AttrValue *m = sm__node_attr(node, "feature_list_dense_missing_assumed_empty");
      st->nmissing = m && m->list ? (int)m->list->n_s : 0;
      s = copy_attr_strings(node, "feature_list_dense_missing_assumed_empty", -1, &st->missing_keys, &st->missing_lens);
    }
    if (s) goto fail;
    st->in_keys[FL_DENSE] = st->in_keys[FL_SPARSE] = st->in_keys[FL_RAGGED] = st->in_missing = 0; /* unused */
  }
  if (st->variant == SEQ_SINGLE) st->in_keys[FL_RAGGED] = 0; /* none */
  st->out_sp_idx = arg_start(node, 1, "feature_list_sparse_indices", NULL);
  st->out_sp_val = arg_start(node, 1, "feature_list_sparse_values", NULL);
  st->out_sp_shape = arg_start(node, 1, "feature_list_sparse_shapes", NULL);
  st->out_dense = arg_start(node, 1, "feature_list_dense_values", NULL);
  st->out_len = arg_start(node, 1, "feature_list_dense_lengths", NULL);
  st->out_rg_val = arg_start(node, 1, "feature_list_ragged_values", NULL);
  st->out_rg_outer = arg_start(node, 1, "feature_list_ragged_outer_splits", NULL);
  st->out_rg_inner = arg_start(node, 1, "feature_list_ragged_inner_splits", NULL);
  if (st->in_keys[0] < 0 || st->in_keys[1] < 0 || st->in_keys[2] < 0 || st->in_missing < 0 ||
      (st->nsparse && (st->out_sp_idx < 0 || st->out_sp_val < 0 || st->out_sp_shape < 0)) ||
      (st->ndense && (st->out_dense < 0 || (st->out_len < 0 && st->variant != SEQ_SINGLE))) ||
      (st->nragged && (st->out_rg_val < 0 || st->out_rg_outer < 0 || st->out_rg_inner < 0))) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "the op's inputs and outputs do not match its attrs");
    goto fail;
  }
  *state = st;
  return NULL;
fail:
  seq_release(st);
  return s;
}

typedef struct {
  const seq_state *st;
  sm_kctx *ctx;
  const sm_tensor *serialized, *names;
  int64_t batch;
  int scalar;
  int nkeys;
  key_ref *keys;   /* sorted */
  key_ref *cfg;    /* config order: dense, sparse, ragged */
  slice *lists;    /* [batch][nkeys]: each key's FeatureList; p NULL = absent */
} seq_run;

static const char *seq_name(const seq_run *r, int64_t b, size_t *len) {
  if (r->names && sm_tensor_num_elements(r->names) == r->batch) {
    const char *s = sm_tensor_string(r->names, b, len);
    if (*len || r->st->variant == SEQ_SINGLE) return s; /* TF's single-example kernel prints "" as is */
  }
  *len = 9;
  return "<unknown>";
}

static sm_status *seq_bad(const seq_run *r, int64_t b) {
  size_t nl;
  const char *nm = seq_name(r, b, &nl);
  return sm_status_new(SM_INVALID_ARGUMENT, "Invalid protocol message input, example id: %.*s", (int)nl, nm);
}

/* Records example b's FeatureList of each configured key (the last entry of a key wins). */
static sm_status *seq_scan(seq_run *r, int64_t b) {
  size_t len;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(r->serialized, b, &len);
  slice *row = r->lists + (size_t)b * (size_t)r->nkeys;
  if (!scan_map(p, p + len, 2, r->keys, r->nkeys, (int)r->st->ndense, (int)r->st->nsparse, row)) return seq_bad(r, b);
  return NULL;
}

/* The next Feature of a FeatureList: 1 with *feat set, 0 at the end, -1 on malformed bytes. */
static int fl_next(const uint8_t **p, const uint8_t *end, slice *feat) {
  while (*p < end) {
    uint32_t f;
    int w;
    uint64_t v;
    slice sub = {0, 0};
    if (!next_field(p, end, &f, &w, &v, &sub)) return -1;
    if (f != 1) continue;
    if (w != 2) return -1;
    *feat = sub;
    return 1;
  }
  return 0;
}

/* Steps and values of example b's list in column col, each Feature checked against dtype. */
static sm_status *fl_count(const seq_run *r, int64_t b, int col, int dtype, int64_t *steps, int64_t *values,
                           int64_t *max_per_step) {
  slice l = r->lists[(size_t)b * (size_t)r->nkeys + (size_t)col];
  const key_ref *key = &r->cfg[col];
  *steps = *values = 0;
  if (max_per_step) *max_per_step = 0;
  if (!l.p) return NULL;
  const uint8_t *p = l.p, *end = l.p + l.n;
  slice feat;
  int got;
  size_t nl;
  const char *nm = seq_name(r, b, &nl);
  while ((got = fl_next(&p, end, &feat)) == 1) {
    int kind;
    int64_t n;
    if (!feature_scan(feat, &kind, &n))
      return sm_status_new(SM_INVALID_ARGUMENT, "Error in sequence feature %.*s in example %.*s", KEYF(key), (int)nl, nm);
    if (kind != KIND_NONE && kind != kind_of_dtype(dtype) && r->st->variant == SEQ_SINGLE)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Name: %.*s, Feature List: %.*s, Index: %lld.  Data types don't match. Expected type: %s  "
                           "Actual type: %s",
                           (int)nl, nm, KEYF(key), (long long)*steps, kind_name(kind_of_dtype(dtype)), kind_name(kind));
    if (kind != KIND_NONE && kind != kind_of_dtype(dtype))
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Name: %.*s, Feature list: %.*s, Index: %lld.  Data types don't match. Expected type: %s, "
                           "Actual type: %s",
                           (int)nl, nm, KEYF(key), (long long)b, kind_name(kind_of_dtype(dtype)), kind_name(kind));
    (*steps)++;
    *values += n;
    if (max_per_step && n > *max_per_step) *max_per_step = n;
  }
  if (got < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Error in sequence feature %.*s in example %.*s", KEYF(key), (int)nl, nm);
  return NULL;
}

/* Copies example b's values of column col to out[at..]; per step, calls back for indices. */
static sm_status *fl_copy(const seq_run *r, int64_t b, int col, sm_tensor *out, int64_t at, int64_t step_stride,
                          int64_t *idx, int idx_rank, int64_t *inner, int inner_split_64, int64_t *inner_at) {
  slice l = r->lists[(size_t)b * (size_t)r->nkeys + (size_t)col];
  if (!l.p) return NULL;
  const uint8_t *p = l.p, *end = l.p + l.n;
  slice feat;
  int64_t step = 0, pos = at;
  while (fl_next(&p, end, &feat) == 1) {
    int kind;
    int64_t n;
    feature_scan(feat, &kind, &n);
    int64_t dst = step_stride >= 0 ? at + step * step_stride : pos;
    if (kind != KIND_NONE && n) {
      sm_status *s = feature_copy(feat, kind, out, dst);
      if (s) return s;
    }
    for (int64_t i = 0; idx && i < n; i++) {
      int64_t *row = idx + (dst + i) * idx_rank;
      if (idx_rank == 3) row[0] = b, row[1] = step, row[2] = i;
      else row[0] = step, row[1] = i;
    }
    pos += n;
    step++;
    if (inner) {
      (*inner_at)++;
      if (inner_split_64) ((int64_t *)inner)[*inner_at] = pos;
      else ((int32_t *)inner)[*inner_at] = (int32_t)pos;
    }
  }
  return NULL;
}

/* A key configured as two kinds: TF's message (it registers sparse keys, then dense, then ragged,
 * and names the later kind first). keys sorted; dense_id / sparse_id: the kinds' cfg values. */
static sm_status *dup_keys(const char *what, const key_ref *keys, int n, int dense_id, int sparse_id) {
  for (int k = 1; k < n; k++)
    if (!key_cmp(&keys[k - 1], &keys[k]) && keys[k - 1].cfg != keys[k].cfg) {
      int x = keys[k - 1].cfg, y = keys[k].cfg;
      int rx = x == sparse_id ? 0 : x == dense_id ? 1 : 2, ry = y == sparse_id ? 0 : y == dense_id ? 1 : 2;
      static const char *const kind[3] = {"sparse", "dense", "ragged"};
      return sm_status_new(SM_INVALID_ARGUMENT, "%s feature %.*s cannot be both %s and %s", what, KEYF(&keys[k]),
                           kind[rx > ry ? rx : ry], kind[rx > ry ? ry : rx]);
    }
  return NULL;
}

/* The context's keys configured twice (before anything is parsed). */
static sm_status *seq_context_dups(const parse_state *c, sm_kctx *ctx) {
  int n = c->ndense + c->nsparse + c->nragged;
  if (n < 2) return NULL;
  sm_status *s = NULL;
  key_ref *keys = sm__kctx_scratch(ctx, (size_t)n * sizeof *keys, &s);
  if (!keys) return s;
  parse_run pr = {0};
  pr.st = c;
  pr.ctx = ctx;
  s = collect_keys(&pr, c->in_dense_keys, c->ndense, CFG_DENSE, keys);
  if (!s) s = collect_keys(&pr, c->in_sparse_keys, c->nsparse, CFG_SPARSE, keys + c->ndense);
  if (!s) s = collect_keys(&pr, c->in_ragged_keys, c->nragged, CFG_RAGGED, keys + c->ndense + c->nsparse);
  if (!s) {
    qsort(keys, (size_t)n, sizeof *keys, key_cmp);
    s = dup_keys("Context", keys, n, CFG_DENSE, CFG_SPARSE);
  }
  sm__kctx_scratch_free(ctx, keys);
  return s;
}

static sm_status *seq_compute(const void *state, sm_kctx *ctx) {
  const seq_state *st = state;
  sm_status *s = seq_context_dups(st->ctx, ctx);
  if (!s) s = parse_compute(st->ctx, ctx); /* the context, as an Example's features */
  if (s) return s;
  seq_run r = {0};
  r.st = st;
  r.ctx = ctx;
  r.serialized = sm__kctx_input(ctx, 0);
  r.names = st->ctx->in_names >= 0 ? sm__kctx_input(ctx, st->ctx->in_names) : NULL;
  if (r.names && (sm_tensor_dtype(r.names) != SM_STRING || sm_tensor_num_elements(r.names) != sm_tensor_num_elements(r.serialized)))
    r.names = NULL;
  r.scalar = sm_tensor_rank(r.serialized) == 0;
  r.batch = sm_tensor_num_elements(r.serialized);
  r.nkeys = st->ndense + st->nsparse + st->nragged;
  const int counts[3] = {st->ndense, st->nsparse, st->nragged};
  static const char *const kname[3] = {"feature_list_dense_keys", "feature_list_sparse_keys", "feature_list_ragged_keys"};
  const sm_tensor *missing = NULL;
  if (st->variant == SEQ_V2) {
    for (int k = 0; k < 3; k++) {
      const sm_tensor *t = sm__kctx_input(ctx, st->in_keys[k]);
      if (!t || sm_tensor_dtype(t) != SM_STRING || sm_tensor_num_elements(t) != counts[k])
        return sm_status_new(SM_INVALID_ARGUMENT, "Expected len(%s) to match the op's count (%d)", kname[k], counts[k]);
    }
    missing = sm__kctx_input(ctx, st->in_missing);
    if (!missing || sm_tensor_dtype(missing) != SM_BOOL || sm_tensor_num_elements(missing) != st->ndense)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected len(feature_list_dense_missing_assumed_empty to match Nfeature_list_dense");
  } else if (st->variant == SEQ_SINGLE) {
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < counts[k]; j++) {
        const sm_tensor *t = sm__kctx_input(ctx, st->in_keys[k] + j);
        if (!t || sm_tensor_dtype(t) != SM_STRING || sm_tensor_num_elements(t) != 1)
          return sm_status_new(SM_INVALID_ARGUMENT, "%s[%d] must be a string scalar", kname[k], j);
      }
    missing = sm__kctx_input(ctx, st->in_missing);
    if (!missing || sm_tensor_dtype(missing) != SM_STRING)
      return sm_status_new(SM_INVALID_ARGUMENT, "feature_list_dense_missing_assumed_empty must be a string tensor");
  }
  size_t cells;
  if (sm__mul_size((size_t)r.batch, (size_t)r.nkeys, &cells) || cells > ((size_t)1 << 32))
    return sm_status_new(SM_OUT_OF_RANGE, "%lld examples x %d keys is too many", (long long)r.batch, r.nkeys);
  if (r.nkeys == 0) return NULL;
  r.cfg = sm__kctx_scratch(ctx, (size_t)r.nkeys * sizeof *r.cfg, &s);
  if (r.cfg) r.keys = sm__kctx_scratch(ctx, (size_t)r.nkeys * sizeof *r.keys, &s);
  if (r.keys) r.lists = sm__kctx_scratch(ctx, (cells ? cells : 1) * sizeof *r.lists, &s);
  uint8_t *miss = r.lists ? sm__kctx_scratch(ctx, (size_t)st->ndense + 1, &s) : NULL;
  if (!miss) return s;
  memset(r.lists, 0, cells * sizeof *r.lists);
  for (int k = 0, c = 0; k < 3; k++) {
    const sm_tensor *t = st->variant == SEQ_V2 ? sm__kctx_input(ctx, st->in_keys[k]) : NULL;
    for (int j = 0; j < counts[k]; j++, c++) {
      if (st->variant == SEQ_V2) {
        r.cfg[c].p = sm_tensor_string(t, j, &r.cfg[c].n);
      } else if (st->variant == SEQ_SINGLE) {
        r.cfg[c].p = sm_tensor_string(sm__kctx_input(ctx, st->in_keys[k] + j), 0, &r.cfg[c].n);
      } else {
        r.cfg[c].p = st->attr_keys[k][j];
        r.cfg[c].n = st->attr_key_lens[k][j];
      }
      r.cfg[c].cfg = k;
      r.cfg[c].j = j;
    }
  }
  /* which dense lists may be missing: V2 a bool per key; V1 / single a list of key names */
  for (int j = 0; j < st->ndense; j++) {
    if (st->variant == SEQ_V2) {
      miss[j] = ((const uint8_t *)sm_tensor_data(missing))[j] != 0;
      continue;
    }
    miss[j] = 0;
    int nm = st->variant == SEQ_V1 ? st->nmissing : (int)sm_tensor_num_elements(missing);
    for (int i = 0; i < nm && !miss[j]; i++) {
      size_t ml;
      const char *mp = st->variant == SEQ_V1 ? st->missing_keys[i] : sm_tensor_string(missing, i, &ml);
      if (st->variant == SEQ_V1) ml = st->missing_lens[i];
      miss[j] = ml == r.cfg[j].n && !memcmp(mp, r.cfg[j].p, ml);
    }
  }
  memcpy(r.keys, r.cfg, (size_t)r.nkeys * sizeof *r.keys);
  qsort(r.keys, (size_t)r.nkeys, sizeof *r.keys, key_cmp);
  s = dup_keys("Sequence", r.keys, r.nkeys, FL_DENSE, FL_SPARSE);
  if (s) return s;
  for (int64_t b = 0; b < r.batch && !s; b++) s = seq_scan(&r, b);
  /* dense */
  for (int j = 0; j < st->ndense && !s; j++) {
    const dense_cfg *c = &st->dense[j];
    int64_t max_steps = 0, steps, vals;
    for (int64_t b = 0; b < r.batch && !s; b++) {
      if (!r.lists[(size_t)b * (size_t)r.nkeys + (size_t)j].p && !miss[j]) {
        size_t nl;
        const char *nm = seq_name(&r, b, &nl);
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Name: %.*s, Feature list '%.*s' is required but could not be found.  Did you mean to include "
                             "it in feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?",
                             (int)nl, nm, KEYF(&r.cfg[j]));
      }
      s = fl_count(&r, b, j, c->dtype, &steps, &vals, NULL);
      if (!s && (c->stride ? vals % c->stride : vals)) {
        char sb[128];
        int64_t d1[SM_MAX_RANK];
        d1[0] = -1;
        memcpy(d1 + 1, c->dims, (size_t)c->rank * sizeof *d1);
        sm_shape_str(c->rank + 1, d1, sb, sizeof sb);
        if (!strncmp(sb, "[-1", 3)) { /* TF prints the unknown dim as ? */
          sb[1] = '?';
          memmove(sb + 2, sb + 3, strlen(sb + 3) + 1);
        }
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Feature list '%.*s' has an unexpected number of values.  Total values size: %lld is not "
                             "consistent with output shape: %s",
                             KEYF(&r.cfg[j]), (long long)vals, sb);
      }
      steps = c->stride ? vals / c->stride : 0;
      if (steps > max_steps) max_steps = steps;
    }
    if (s) break;
    int64_t dims[SM_MAX_RANK];
    int rank = 0;
    if (!r.scalar) dims[rank++] = r.batch;
    dims[rank++] = max_steps;
    for (int d = 0; d < c->rank; d++) dims[rank++] = c->dims[d];
    sm_tensor *out, *lens;
    s = sm__kctx_alloc_output(ctx, st->out_dense + j, c->dtype, rank, dims, &out);
    lens = NULL;
    if (!s && st->out_len >= 0) s = sm__kctx_alloc_output(ctx, st->out_len + j, SM_INT64, r.scalar ? 0 : 1, &r.batch, &lens);
    for (int64_t b = 0; b < r.batch && !s; b++) {
      fl_count(&r, b, j, c->dtype, &steps, &vals, NULL);
      if (lens) ((int64_t *)sm_tensor_data(lens))[b] = c->stride ? vals / c->stride : 0;
      s = fl_copy(&r, b, j, out, b * max_steps * c->stride, -1, NULL, 0, NULL, 0, NULL);
    }
  }
  /* sparse and ragged */
  for (int j = 0; j < st->nsparse + st->nragged && !s; j++) {
    int ragged = j >= st->nsparse, jj = ragged ? j - st->nsparse : j;
    int col = st->ndense + j;
    int dtype = ragged ? st->ragged_types[jj] : st->sparse_types[jj];
    int64_t total = 0, total_steps = 0, max_steps = 0, max_vals = 0, steps, vals, mx;
    for (int64_t b = 0; b < r.batch && !s; b++) {
      s = fl_count(&r, b, col, dtype, &steps, &vals, &mx);
      if (s) break;
      total += vals, total_steps += steps;
      if (steps > max_steps) max_steps = steps;
      if (mx > max_vals) max_vals = mx;
      if (total > (1ll << 40) || total_steps > (1ll << 40))
        s = sm_status_new(SM_OUT_OF_RANGE, "too many values for feature list %.*s", KEYF(&r.cfg[col]));
    }
    if (s) break;
    sm_tensor *values, *idx = NULL, *outer = NULL, *inner = NULL;
    s = sm__kctx_alloc_output(ctx, (ragged ? st->out_rg_val : st->out_sp_val) + jj, dtype, 1, &total, &values);
    int idx_rank = r.scalar ? 2 : 3, split64 = ragged && st->split_types[jj] == SM_INT64;
    if (!s && !ragged) {
      int64_t idims[2] = {total, idx_rank}, sr = idx_rank;
      sm_tensor *shape;
      s = sm__kctx_alloc_output(ctx, st->out_sp_idx + jj, SM_INT64, 2, idims, &idx);
      if (!s) s = sm__kctx_alloc_output(ctx, st->out_sp_shape + jj, SM_INT64, 1, &sr, &shape);
      if (!s) {
        int64_t *sd = sm_tensor_data(shape), k = 0;
        if (!r.scalar) sd[k++] = r.batch;
        sd[k++] = max_steps;
        sd[k] = max_vals;
      }
    } else if (!s) {
      if (ragged && (total > INT32_MAX || total_steps > INT32_MAX) && !split64)
        s = sm_status_new(SM_OUT_OF_RANGE, "feature list %.*s has more values than int32 splits hold", KEYF(&r.cfg[col]));
      int64_t no = r.batch + 1, ni = total_steps + 1;
      if (!s) s = sm__kctx_alloc_output(ctx, st->out_rg_outer + jj, st->split_types[jj], r.scalar ? 0 : 1, &no, &outer);
      if (!s) s = sm__kctx_alloc_output(ctx, st->out_rg_inner + jj, st->split_types[jj], 1, &ni, &inner);
    }
    int64_t at = 0, step_at = 0;
    for (int64_t b = 0; b < r.batch && !s; b++) {
      fl_count(&r, b, col, dtype, &steps, &vals, &mx);
      s = fl_copy(&r, b, col, values, at, -1, idx ? sm_tensor_data(idx) : NULL, idx_rank, inner ? sm_tensor_data(inner) : NULL,
                  split64, &step_at);
      at += vals;
      if (outer) {
        int64_t o = r.scalar ? steps : step_at;
        int64_t k = r.scalar ? 0 : b + 1;
        if (split64) ((int64_t *)sm_tensor_data(outer))[k] = o;
        else ((int32_t *)sm_tensor_data(outer))[k] = (int32_t)o;
      }
    }
  }
  sm__kctx_scratch_free(ctx, r.cfg);
  sm__kctx_scratch_free(ctx, r.keys);
  sm__kctx_scratch_free(ctx, r.lists);
  sm__kctx_scratch_free(ctx, miss);
  return s;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_parsing[] = {
    {"ParseExample", parse_prepare, parse_compute, parse_release, 0},
    {"ParseExampleV2", parse_prepare, parse_compute, parse_release, 0},
    {"ParseSingleExample", parse_prepare, parse_compute, parse_release, 0},
    {"ParseSequenceExampleV2", seq_prepare, seq_compute, seq_release, 0},
    {"ParseSequenceExample", seq_prepare, seq_compute, seq_release, 0},
    {"ParseSingleSequenceExample", seq_prepare, seq_compute, seq_release, 0},
    {0},
};
