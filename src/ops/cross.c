/* cross.c - feature crossing with TensorFlow's semantics (sparse_cross_op.cc is the reference):
 * SparseCross (hashed or "a_X_b" strings; Keras HashedCrossing exports it), SparseCrossHashed
 * (num_buckets; strong_hash is refused: TF 2.21 itself crashes on it, so there is no reference) and
 * SparseCrossV2 (a separator). Inputs are N
 * sparse [batch, k] tensors (indices, values, dense_shape) then M dense [batch, k] ones, int64 or
 * string; each row's output is the cartesian product of its features, the last column varying
 * fastest, as a sparse [batch, max] result. Hashes: FingerprintCat64 chained from hash_key over
 * each feature (an int64 as is, a string's Fingerprint64); SparseCrossHashed chains from the first
 * feature instead, and hashes a sparse int64 as TF does (Fingerprint64 of its low 4 bytes).
 * RaggedCross (tf.ragged.cross / cross_hashed, ragged_cross_op.cc): ragged [batch, (k)], sparse and
 * dense [batch, k] inputs in input_order ("R", "S", "D"), each row's cross as one ragged row (the
 * last feature varying fastest), "a_X_b" strings or V1's hash chained from hash_key (% num_buckets
 * when it is > 0, else % INT64_MAX); int32 or int64 output splits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/farmhash.h"
#include "ops/ragged_internal.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

enum { CROSS_V1, CROSS_HASHED, CROSS_V2 };

typedef struct cross_state {
  int kind;
  int hashed; /* V1's hashed_output; always for CROSS_HASHED */
  int64_t num_buckets, hash_key;
  int internal_string; /* V1's internal_type is string: int64 inputs are refused, as TF does */
} cross_state;

static sm_status *cross_prepare_kind(const sm_node *node, void **state, int kind) {
  cross_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->kind = kind;
  st->hashed = kind == CROSS_HASHED;
  sm_status *s = NULL;
  if (kind == CROSS_V1) {
    s = sm__node_attr_bool(node, "hashed_output", &st->hashed);
    if (!s) s = sm__node_attr_int(node, "num_buckets", &st->num_buckets);
    if (!s) s = sm__node_attr_int(node, "hash_key", &st->hash_key);
    int it = SM_INT64;
    if (!s) s = sm__node_attr_type(node, "internal_type", &it);
    st->internal_string = it == SM_STRING;
    if (!s && st->num_buckets < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "num_buckets must be >= 0");
  }
  if (s) {
    sm__free(st);
    return s;
  }
  *state = st;
  return NULL;
}
static sm_status *cross_prepare(const sm_node *n, void **s) { return cross_prepare_kind(n, s, CROSS_V1); }
static sm_status *cross_hashed_prepare(const sm_node *n, void **s) { return cross_prepare_kind(n, s, CROSS_HASHED); }
static sm_status *cross_v2_prepare(const sm_node *n, void **s) { return cross_prepare_kind(n, s, CROSS_V2); }

/* One input column: a sparse one's values and each row's first feature, or a dense matrix. */
typedef struct column {
  const sm_tensor *values;
  int64_t *start; /* sparse: [batch + 1] feature offsets into values; NULL for dense */
  int64_t width;  /* dense: features per row */
} column;

static int64_t col_count(const column *c, int64_t b) { return c->start ? c->start[b + 1] - c->start[b] : c->width; }
static int64_t col_at(const column *c, int64_t b, int64_t k) { return c->start ? c->start[b] + k : b * c->width + k; }

static sm_status *want_kind(const sm_tensor *t, const char *what, int i) {
  int dt = sm_tensor_dtype(t);
  if (dt != SM_INT64 && dt != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s %d must be int64 or string, not %s", what, i, sm_dtype_name(dt));
  return NULL;
}

/* TF's ValidateInput, then the columns (sparse first, dense after). */
static sm_status *cross_columns(sm_kctx *ctx, int n, int m, int internal_string, column *cols, int64_t *batch) {
  for (int i = 0; i < n; i++) {
    const sm_tensor *ix = sm__kctx_input(ctx, i), *sh = sm__kctx_input(ctx, 2 * n + i);
    if (sm_tensor_dtype(ix) != SM_INT64 || sm_tensor_dtype(sh) != SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices and shapes must be int64 (position %d)", i);
    if (sm_tensor_rank(ix) != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input indices should be a matrix but received shape %s at position %d",
                           tx_shape_of(ix).s, i);
    if (sm_tensor_dims(ix)[1] != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected D2 of index to be 2 got %" PRId64 " at position %d",
                           sm_tensor_dims(ix)[1], i);
  }
  for (int i = 0; i < n; i++) {
    const sm_tensor *ix = sm__kctx_input(ctx, i), *v = sm__kctx_input(ctx, n + i);
    sm_status *s = want_kind(v, "values", i);
    if (s) return s;
    if (internal_string && sm_tensor_dtype(v) == SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input values should be of internal type %d but received %d", SM_STRING, SM_INT64);
    if (sm_tensor_rank(v) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input values should be a vector but received shape %s at position %d",
                           tx_shape_of(v).s, i);
    if (sm_tensor_dims(ix)[0] != sm_tensor_dims(v)[0])
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected size of values to be %" PRId64 " got %" PRId64 " at position %d",
                           sm_tensor_dims(ix)[0], sm_tensor_dims(v)[0], i);
  }
  for (int i = 0; i < n; i++) {
    const sm_tensor *sh = sm__kctx_input(ctx, 2 * n + i);
    if (sm_tensor_rank(sh) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input shapes should be a vector but received shape %s at position %d",
                           tx_shape_of(sh).s, i);
    if (sm_tensor_dims(sh)[0] != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "shape should imply a 2D tensor, but got %s at position %d", tx_shape_of(sh).s, i);
  }
  for (int i = 0; i < m; i++) {
    const sm_tensor *d = sm__kctx_input(ctx, 3 * n + i);
    sm_status *s = want_kind(d, "dense_inputs", i);
    if (s) return s;
    if (internal_string && sm_tensor_dtype(d) == SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dense inputs should be of internal type %d but received %d", SM_STRING, SM_INT64);
    if (sm_tensor_rank(d) != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dense inputs should be a matrix but received shape %s at position %d",
                           tx_shape_of(d).s, i);
  }
  *batch = n ? ((const int64_t *)sm_tensor_data(sm__kctx_input(ctx, 2 * n)))[0]
             : m ? sm_tensor_dims(sm__kctx_input(ctx, 3 * n))[0] : 0;
  if (*batch < 0) return sm_status_new(SM_INVALID_ARGUMENT, "batch size %" PRId64 " is negative", *batch);
  for (int i = 0; i < n; i++) {
    int64_t b = ((const int64_t *)sm_tensor_data(sm__kctx_input(ctx, 2 * n + i)))[0];
    if (b != *batch)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected batch size %" PRId64 " got %" PRId64 " at position %d", *batch, b, i);
  }
  for (int i = 0; i < m; i++) {
    int64_t b = sm_tensor_dims(sm__kctx_input(ctx, 3 * n + i))[0];
    if (b != *batch)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected batch size %" PRId64 " got %" PRId64 " at dense tensor %d", *batch, b, i);
  }
  sm_status *s = NULL;
  for (int i = 0; i < n && !s; i++) {
    const sm_tensor *ix = sm__kctx_input(ctx, i);
    const int64_t *p = sm_tensor_data(ix);
    int64_t nnz = sm_tensor_dims(ix)[0];
    cols[i].values = sm__kctx_input(ctx, n + i);
    cols[i].start = sm__kctx_scratch(ctx, (size_t)(*batch + 2) * sizeof(int64_t), &s);
    if (!cols[i].start) break;
    memset(cols[i].start, 0, (size_t)(*batch + 2) * sizeof(int64_t));
    for (int64_t k = 0; k < nnz; k++) {
      int64_t row = p[2 * k];
      if (row < 0 || row >= *batch || (k && row < p[2 * (k - 1)]))
        return sm_status_new(SM_INVALID_ARGUMENT, "indices[%" PRId64 "] of sparse input %d: row %" PRId64
                             " is out of order or not in [0, %" PRId64 ")", k, i, row, *batch);
      cols[i].start[row + 1]++;
    }
    for (int64_t b = 0; b < *batch; b++) cols[i].start[b + 1] += cols[i].start[b];
  }
  for (int i = 0; i < m; i++) {
    cols[n + i].values = sm__kctx_input(ctx, 3 * n + i);
    cols[n + i].start = NULL;
    cols[n + i].width = sm_tensor_dims(cols[n + i].values)[1];
  }
  return s;
}

/* A feature's hash; keyed: SparseCrossHashed's, which fingerprints a sparse int64's first 4 bytes
 * (TF hashes sizeof(DataType) bytes of it) and takes a dense one as is. */
/* Writes the string of one crossed feature to ov[o]: row b's values at perm of each column, joined
 * by sep (int64 values in decimal), built in buf. */
static sm_status *cross_join(sm_kctx *ctx, tx_buf *buf, const column *cols, int64_t nc, int64_t b, const int64_t *perm,
                             const char *sep, size_t sep_len, sm_tensor *ov, int64_t o) {
  sm_status *s = NULL;
  buf->len = 0;
  for (int64_t i = 0; i < nc && !s; i++) {
    const column *c = &cols[i];
    int64_t at = col_at(c, b, perm[i]);
    if (i) s = tx_put(ctx, buf, sep, sep_len);
    if (s) break;
    if (sm_tensor_dtype(c->values) == SM_INT64) {
      char num[24];
      int k = snprintf(num, sizeof num, "%" PRId64, ((const int64_t *)sm_tensor_data(c->values))[at]);
      s = tx_put(ctx, buf, num, (size_t)k);
    } else {
      size_t len;
      const char *p = sm_tensor_string(c->values, at, &len);
      s = tx_put(ctx, buf, p, len);
    }
  }
  return s ? s : sm_tensor_set_string(ov, o, buf->p ? buf->p : "", buf->len);
}

static uint64_t feature_hash(const column *c, int64_t at, int keyed) {
  if (sm_tensor_dtype(c->values) == SM_INT64) {
    int64_t v = ((const int64_t *)sm_tensor_data(c->values))[at];
    if (!keyed || !c->start) return (uint64_t)v;
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    return sm__fingerprint64(le, 4);
  }
  size_t n;
  const unsigned char *p = (const unsigned char *)sm_tensor_string(c->values, at, &n);
  return sm__fingerprint64(p, n);
}

static sm_status *cross_compute(const void *state, sm_kctx *ctx) {
  const cross_state *st = state;
  int extra = st->kind == CROSS_HASHED ? 3 : st->kind == CROSS_V2 ? 1 : 0;
  int nin = sm__kctx_num_inputs(ctx) - extra;
  const sm_node *node = sm__kctx_node(ctx);
  int64_t n = 0;
  if (sm__node_attr(node, "N")) {
    sm_status *s = sm__node_attr_int(node, "N", &n);
    if (s) return s;
  }
  int64_t m = nin - 3 * n;
  if (n < 0 || m < 0) return sm_status_new(SM_INVALID_ARGUMENT, "%d inputs for N = %" PRId64 " sparse ones", nin, n);
  int64_t buckets = st->num_buckets, key = st->hash_key;
  const char *sep = "_X_";
  size_t sep_len = 3;
  if (st->kind == CROSS_HASHED) {
    const sm_tensor *nb = sm__kctx_input(ctx, nin), *sh = sm__kctx_input(ctx, nin + 1), *sa = sm__kctx_input(ctx, nin + 2);
    if (sm_tensor_dtype(nb) != SM_INT64 || sm_tensor_num_elements(nb) != 1 || sm_tensor_dtype(sh) != SM_BOOL ||
        sm_tensor_num_elements(sh) != 1 || sm_tensor_dtype(sa) != SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "num_buckets (int64), strong_hash (bool) and salt (int64) must be scalars");
    buckets = *(const int64_t *)sm_tensor_data(nb);
    if (*(const uint8_t *)sm_tensor_data(sh))
      return sm_status_new(SM_UNIMPLEMENTED, "SparseCrossHashed with strong_hash=True is not supported (TensorFlow 2.21 "
                           "itself crashes on it)");
  } else if (st->kind == CROSS_V2) {
    const sm_tensor *sp = sm__kctx_input(ctx, nin);
    if (sm_tensor_dtype(sp) != SM_STRING || sm_tensor_rank(sp) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input separator should be a scalar but received shape %s", tx_shape_of(sp).s);
    sep = sm_tensor_string(sp, 0, &sep_len);
  }
  if (n + m > 4096) return sm_status_new(SM_INVALID_ARGUMENT, "too many inputs to cross: %" PRId64, n + m);
  sm_status *s = NULL;
  column *cols = sm__kctx_scratch(ctx, (size_t)(n + m + 1) * sizeof *cols, &s);
  int64_t *perm = cols ? sm__kctx_scratch(ctx, (size_t)(n + m + 1) * sizeof *perm, &s) : NULL;
  if (!perm) return s;
  int64_t batch = 0, nc = n + m;
  if ((s = cross_columns(ctx, (int)n, (int)m, st->kind == CROSS_V1 && st->internal_string, cols, &batch))) return s;
  /* counts: each row's product of feature counts */
  int64_t total = 0, widest = 0;
  for (int64_t b = 0; b < batch; b++) {
    int64_t c = nc ? 1 : 0;
    for (int64_t i = 0; i < nc; i++)
      if (__builtin_mul_overflow(c, col_count(&cols[i], b), &c))
        return sm_status_new(SM_INVALID_ARGUMENT, "the cross of row %" PRId64 " is too large", b);
    if (__builtin_add_overflow(total, c, &total)) return sm_status_new(SM_INVALID_ARGUMENT, "the cross is too large");
    if (c > widest) widest = c;
  }
  int hashed = st->hashed;
  sm_tensor *oi, *ov, *os;
  s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, 2}, &oi);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, hashed ? SM_INT64 : SM_STRING, 1, &total, &ov);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){2}, &os);
  if (s) return s;
  ((int64_t *)sm_tensor_data(os))[0] = batch, ((int64_t *)sm_tensor_data(os))[1] = widest;
  int64_t *ip = sm_tensor_data(oi), o = 0;
  tx_buf buf = {0};
  for (int64_t b = 0; b < batch && !s; b++) {
    int any = nc > 0;
    for (int64_t i = 0; i < nc; i++) {
      perm[i] = 0;
      if (!col_count(&cols[i], b)) any = 0;
    }
    for (int64_t j = 0; any && !s; j++, o++) {
      ip[2 * o] = b, ip[2 * o + 1] = j;
      if (hashed) {
        int keyed = st->kind == CROSS_HASHED;
        uint64_t h = keyed ? feature_hash(&cols[0], col_at(&cols[0], b, perm[0]), 1) : (uint64_t)key;
        for (int64_t i = keyed; i < nc; i++)
          h = sm__fingerprint_cat64(h, feature_hash(&cols[i], col_at(&cols[i], b, perm[i]), keyed));
        ((int64_t *)sm_tensor_data(ov))[o] = (int64_t)(buckets > 0 ? h % (uint64_t)buckets : h % (uint64_t)INT64_MAX);
      } else {
        s = cross_join(ctx, &buf, cols, nc, b, perm, sep, sep_len, ov, o);
      }
      /* the next permutation: the last column varies fastest */
      int carry = 1;
      for (int64_t i = nc - 1; i >= 0 && carry; i--) {
        if (++perm[i] == col_count(&cols[i], b)) perm[i] = 0;
        else carry = 0;
      }
      if (carry) any = 0;
    }
  }
  sm__kctx_scratch_free(ctx, buf.p);
  return s;
}

/* ---- RaggedCross ----------------------------------------------------------------------------- */
typedef struct rcross_state {
  int64_t num_buckets, hash_key;
  int nr, ns, nd;
  char *order; /* input_order, NUL-terminated */
  size_t norder;
} rcross_state;

static void rcross_free(void *p) {
  rcross_state *s = p;
  if (s) sm__free(s->order);
  sm__free(s);
}

static sm_status *rcross_prepare(const sm_node *node, void **state) {
  rcross_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  const int *t;
  size_t nrv = 0, nrs = 0, nsv = 0, nd = 0, olen = 0;
  int64_t nsparse = 0;
  const char *o = NULL;
  sm_status *s = sm__node_attr_int(node, "num_buckets", &st->num_buckets);
  if (!s) s = sm__node_attr_int(node, "hash_key", &st->hash_key);
  if (!s) s = sm__node_attr_int(node, "Nsparse", &nsparse);
  if (!s) s = sm__node_attr_types(node, "ragged_values_types", &t, &nrv);
  if (!s) s = sm__node_attr_types(node, "ragged_splits_types", &t, &nrs);
  if (!s) s = sm__node_attr_types(node, "sparse_values_types", &t, &nsv);
  if (!s) s = sm__node_attr_types(node, "dense_types", &t, &nd);
  if (!s) s = sm__node_attr_string(node, "input_order", &o, &olen);
  if (!s && nrv != nrs) s = sm_status_new(SM_INVALID_ARGUMENT, "ragged values and splits must have the same length");
  if (!s && (int64_t)nsv != nsparse) s = sm_status_new(SM_INVALID_ARGUMENT, "sparse indices and values must have the same length");
  if (!s && nrv + nsv + nd != olen) s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid length for input_order");
  if (!s && st->num_buckets < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Value for attr 'num_buckets' of %" PRId64 " must be at least minimum 0", st->num_buckets);
  if (!s && olen > 4096) s = sm_status_new(SM_INVALID_ARGUMENT, "too many inputs to cross: %zu", olen);
  if (!s && !(st->order = sm__calloc(olen + 1))) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  if (s) {
    rcross_free(st);
    return s;
  }
  memcpy(st->order, o, olen);
  st->order[olen] = 0;
  st->norder = olen;
  st->nr = (int)nrv, st->ns = (int)nsparse, st->nd = (int)nd;
  *state = st;
  return NULL;
}

static sm_status *rcross_compute(const void *state, sm_kctx *ctx) {
  const rcross_state *st = state;
  int nr = st->nr, ns = st->ns, nd = st->nd;
#define RV(i) sm__kctx_input(ctx, (i))
#define RS(i) sm__kctx_input(ctx, nr + (i))
#define SI(i) sm__kctx_input(ctx, 2 * nr + (i))
#define SV(i) sm__kctx_input(ctx, 2 * nr + ns + (i))
#define SS(i) sm__kctx_input(ctx, 2 * nr + 2 * ns + (i))
#define DI(i) sm__kctx_input(ctx, 2 * nr + 3 * ns + (i))
  if (sm__kctx_num_inputs(ctx) != 2 * nr + 3 * ns + nd) return sm_status_new(SM_INVALID_ARGUMENT, "RaggedCross: wrong input count");
  const char *rank2 = "tf.ragged.cross only supports inputs with rank=2.";
  for (int i = 0; i < nr; i++) {
    if (sm_tensor_rank(RV(i)) != 1 || sm_tensor_rank(RS(i)) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s", rank2);
    if (sm_tensor_dtype(RS(i)) != SM_INT32 && sm_tensor_dtype(RS(i)) != SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "Unexpected row_splits.dtype for input %d: %s", i + 1, sm_dtype_name(sm_tensor_dtype(RS(i))));
    sm_status *s = sm__ragged_verify_splits(RS(i), sm_tensor_num_elements(RV(i)));
    if (s) return s;
  }
  for (int i = 0; i < ns; i++) {
    if (sm_tensor_rank(SI(i)) != 2 || sm_tensor_rank(SV(i)) != 1 || sm_tensor_rank(SS(i)) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid SparseTensor %d", i);
    if (sm_tensor_num_elements(SS(i)) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "%s", rank2);
    if (sm_tensor_dtype(SI(i)) != SM_INT64 || sm_tensor_dtype(SS(i)) != SM_INT64 || sm_tensor_dims(SI(i))[1] < 1 ||
        sm_tensor_dims(SI(i))[0] != sm_tensor_dims(SV(i))[0])
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid SparseTensor %d", i);
  }
  for (int i = 0; i < nd; i++)
    if (sm_tensor_rank(DI(i)) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "%s", rank2);
  int64_t batch = nr ? sm_tensor_num_elements(RS(0)) - 1 : nd ? sm_tensor_dims(DI(0))[0] : ns ? ((const int64_t *)sm_tensor_data(SS(0)))[0] : 0;
  for (int i = 0; i < nr; i++)
    if (sm_tensor_num_elements(RS(i)) - 1 != batch) return sm_status_new(SM_INVALID_ARGUMENT, "inputs must all have the same batch dimension size.");
  for (int i = 0; i < ns; i++)
    if (((const int64_t *)sm_tensor_data(SS(i)))[0] != batch)
      return sm_status_new(SM_INVALID_ARGUMENT, "inputs must all have the same batch dimension size.");
  for (int i = 0; i < nd; i++)
    if (sm_tensor_dims(DI(i))[0] != batch) return sm_status_new(SM_INVALID_ARGUMENT, "inputs must all have the same batch dimension size.");
  if (batch < 0) return sm_status_new(SM_INVALID_ARGUMENT, "batch size %" PRId64 " is negative", batch);
  /* the features, in input_order: a column each (ragged and sparse as per-row offsets) */
  int64_t nc = (int64_t)st->norder;
  sm_status *s = NULL;
  column *cols = sm__kctx_scratch(ctx, (size_t)(nc + 1) * sizeof *cols, &s);
  int64_t *perm = cols ? sm__kctx_scratch(ctx, (size_t)(nc + 1) * sizeof *perm, &s) : NULL;
  if (!perm) return s;
  int r = 0, sp = 0, dn = 0;
  for (int64_t c = 0; c < nc; c++) {
    char k = st->order[c];
    const sm_tensor *v;
    if (k == 'R') {
      if (r >= nr)
        return sm_status_new(SM_INVALID_ARGUMENT, "input_order \"%s\" specifies reading a ragged tensor value at index %d from a list of %d values.",
                             st->order, r, nr);
      v = RV(r);
      cols[c].start = sm__kctx_scratch(ctx, (size_t)(batch + 1) * sizeof(int64_t), &s);
      if (!cols[c].start) return s;
      for (int64_t b = 0; b <= batch; b++) cols[c].start[b] = sm__ragged_split_at(RS(r), b);
      r++;
    } else if (k == 'S') {
      if (sp >= ns)
        return sm_status_new(SM_INVALID_ARGUMENT, "input_order \"%s\" specifies reading a sparse tensor value at index %d from a list of %d values.",
                             st->order, sp, ns);
      v = SV(sp);
      const int64_t *ix = sm_tensor_data(SI(sp));
      int64_t w = sm_tensor_dims(SI(sp))[1], nv = sm_tensor_num_elements(v), i = 0;
      cols[c].start = sm__kctx_scratch(ctx, (size_t)(batch + 1) * sizeof(int64_t), &s);
      if (!cols[c].start) return s;
      cols[c].start[0] = 0;
      for (int64_t row = 0; row < batch; row++) { /* TF's SparseFeatureReader: rows from the first index column */
        while (i < nv && ix[i * w] <= row) i++;
        cols[c].start[row + 1] = i;
      }
      sp++;
    } else if (k == 'D') {
      if (dn >= nd)
        return sm_status_new(SM_INVALID_ARGUMENT, "input_order \"%s\" specifies reading a dense tensor at index %d from a list of %d tensors.",
                             st->order, dn, nd);
      v = DI(dn++);
      cols[c].start = NULL;
      cols[c].width = sm_tensor_dims(v)[1];
    } else {
      return sm_status_new(SM_INVALID_ARGUMENT, "Unexpected input_order value.");
    }
    if (sm_tensor_dtype(v) != SM_INT64 && sm_tensor_dtype(v) != SM_STRING)
      return sm_status_new(SM_INVALID_ARGUMENT, "Unexpected dtype for input %d: %s", (int)c + 1, sm_dtype_name(sm_tensor_dtype(v)));
    cols[c].values = v;
  }
  int odt = sm__node_output_dtype(sm__kctx_node(ctx), 0), sdt = sm__node_output_dtype(sm__kctx_node(ctx), 1);
  if ((odt != SM_INT64 && odt != SM_STRING) || (sdt != SM_INT32 && sdt != SM_INT64))
    return sm_status_new(SM_INVALID_ARGUMENT, "RaggedCross: out_values_type must be int64 or string, out_row_splits_type int32 or int64");
  sm_tensor *ov, *osp;
  if ((s = sm__kctx_alloc_output(ctx, 1, sdt, 1, (int64_t[]){batch + 1}, &osp))) return s;
  int64_t total = 0;
  for (int64_t b = 0; b < batch; b++) {
    int64_t cnt = 1;
    for (int64_t i = 0; i < nc && cnt; i++) {
      int64_t k = col_count(&cols[i], b);
      if (k < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid RaggedTensor");
      if (__builtin_mul_overflow(cnt, k, &cnt)) return sm_status_new(SM_INVALID_ARGUMENT, "the cross of row %" PRId64 " is too large", b);
    }
    if (__builtin_add_overflow(total, cnt, &total) || (sdt == SM_INT32 && total > INT32_MAX))
      return sm_status_new(SM_INVALID_ARGUMENT, "the cross is too large");
    if (sdt == SM_INT32) ((int32_t *)sm_tensor_data(osp))[b + 1] = (int32_t)total;
    else ((int64_t *)sm_tensor_data(osp))[b + 1] = total;
  }
  if ((s = sm__kctx_alloc_output(ctx, 0, odt, 1, &total, &ov))) return s;
  int64_t o = 0;
  tx_buf buf = {0};
  for (int64_t b = 0; b < batch && !s; b++) {
    int any = 1;
    for (int64_t i = 0; i < nc; i++) {
      perm[i] = 0;
      if (!col_count(&cols[i], b)) any = 0;
    }
    for (; any && !s; o++) {
      if (odt == SM_INT64) {
        uint64_t h = (uint64_t)st->hash_key;
        for (int64_t i = 0; i < nc; i++) h = sm__fingerprint_cat64(h, feature_hash(&cols[i], col_at(&cols[i], b, perm[i]), 0));
        ((int64_t *)sm_tensor_data(ov))[o] = (int64_t)(st->num_buckets > 0 ? h % (uint64_t)st->num_buckets : h % (uint64_t)INT64_MAX);
      } else {
        s = cross_join(ctx, &buf, cols, nc, b, perm, "_X_", 3, ov, o);
      }
      int carry = 1; /* the last feature varies fastest */
      for (int64_t i = nc - 1; i >= 0 && carry; i--) {
        if (++perm[i] == col_count(&cols[i], b)) perm[i] = 0;
        else carry = 0;
      }
      if (carry) any = 0;
    }
  }
  sm__kctx_scratch_free(ctx, buf.p);
#undef RV
#undef RS
#undef SI
#undef SV
#undef SS
#undef DI
  return s;
}

const sm_kernel sm_kernels_cross[] = {
    {"SparseCross", cross_prepare, cross_compute, sm__free, 0},
    {"SparseCrossHashed", cross_hashed_prepare, cross_compute, sm__free, 0},
    {"SparseCrossV2", cross_v2_prepare, cross_compute, sm__free, 0},
    {"RaggedCross", rcross_prepare, rcross_compute, rcross_free, 0},
    {0},
};
