/* ragged.c - the ragged kernel family with TensorFlow's semantics (its CPU kernels are the
 * reference): RaggedTensorToTensor (every row_partition_types form: ROW_SPLITS, FIRST_DIM_SIZE +
 * VALUE_ROWIDS, nested; shape given, partly given or not; default_value broadcast), RaggedGather,
 * RaggedRange, RaggedBincount (TextVectorization's multi_hot / count / tf_idf) and
 * RaggedTensorToSparse. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/array_internal.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

/* ---- RaggedTensorToTensor ------------------------------------------------------------------- */

enum { RP_FIRST_DIM_SIZE, RP_VALUE_ROWIDS, RP_ROW_SPLITS };
#define RP_MAX 64

typedef struct r2t_state {
  int ntypes, types[RP_MAX];
  int ragged_rank;
} r2t_state;

static sm_status *r2t_prepare(const sm_node *node, void **state) {
  const ProtobufCBinaryData *v;
  size_t n;
  sm_status *s = sm__node_attr_strings(node, "row_partition_types", &v, &n);
  if (s) return s;
  if (n > RP_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "at most %d row_partition_types, not %zu", RP_MAX, n);
  r2t_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const char *t = (const char *)v[i].data;
    size_t len = v[i].len;
#define IS(name) (len == sizeof name - 1 && !memcmp(t, name, len))
    if (IS("FIRST_DIM_SIZE")) st->types[i] = RP_FIRST_DIM_SIZE;
    else if (IS("VALUE_ROWIDS")) st->types[i] = RP_VALUE_ROWIDS;
    else if (IS("ROW_SPLITS")) st->types[i] = RP_ROW_SPLITS;
#undef IS
    else {
      sm__free(st);
      return sm_status_new(SM_INVALID_ARGUMENT, "Unknown string for partition info type: %.*s", (int)len, t);
    }
  }
  st->ntypes = (int)n;
  st->ragged_rank = n && st->types[0] == RP_FIRST_DIM_SIZE ? (int)n - 1 : (int)n;
  *state = st;
  return NULL;
}

static const char *rp_name(int t) {
  return t == RP_FIRST_DIM_SIZE ? "FIRST_DIM_SIZE" : t == RP_VALUE_ROWIDS ? "VALUE_ROWIDS" : "ROW_SPLITS";
}

/* The partition tensor and type that relate dimension d to d + 1. */
static const sm_tensor *r2t_part(const r2t_state *st, sm_kctx *ctx, int d, int *type) {
  int k = st->types[0] == RP_FIRST_DIM_SIZE ? d + 1 : d;
  *type = st->types[k];
  return sm__kctx_input(ctx, 3 + k);
}

/* TF's CombineRaggedTensorToTensorShapes + ValidateDefaultValueShape: the output dims (-1 where
 * the data decides), into out[0..*rank). */
static sm_status *r2t_shape(const r2t_state *st, const sm_tensor *shape, const sm_tensor *values, const sm_tensor *dflt,
                            int64_t *out, int *rank) {
  int vr = sm_tensor_rank(values), dr = sm_tensor_rank(dflt);
  const int64_t *vd = sm_tensor_dims(values), *dd = sm_tensor_dims(dflt);
  /* default_value must broadcast to one value element (values.shape[1:]) */
  if (dr >= vr)
    return sm_status_new(SM_INVALID_ARGUMENT, "default_value.shape=%s and rt_input.flat_values.shape=%s are incompatible: "
                         "default_value.rank = %d must be less than rt_input.flat_values.rank = %d",
                         tx_shape_of(dflt).s, tx_shape_of(values).s, dr, vr);
  for (int i = 1; i <= dr; i++) {
    int64_t a = dd[dr - i], b = vd[vr - i];
    if (a != 1 && a != b)
      return sm_status_new(SM_INVALID_ARGUMENT, "default_value.shape=%s and rt_input.flat_values.shape=%s are incompatible: "
                           "default_value.shape[%d] = %" PRId64 " but rt_input.flat_values.shape[%d] = %" PRId64,
                           tx_shape_of(dflt).s, tx_shape_of(values).s, -i, a, -i, b);
  }
  *rank = st->ragged_rank + vr;
  if (*rank > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "output rank %d is too large", *rank);
  for (int i = 0; i < *rank; i++) out[i] = -1;
  int sr = sm_tensor_rank(shape);
  if (sr == 0) { /* a scalar -1: unknown rank */
    if (tx_int(shape, 0) != -1)
      return sm_status_new(SM_INVALID_ARGUMENT, "shape must be a vector, or the scalar -1 (unknown rank)");
  } else if (sr == 1) {
    int64_t n = sm_tensor_dims(shape)[0];
    if (n != *rank) {
      char b[160] = "[";
      size_t k = 1;
      for (int64_t i = 0; i < n && k < sizeof b - 24; i++)
        k += (size_t)snprintf(b + k, sizeof b - k, "%s%" PRId64, i ? "," : "", tx_int(shape, i));
      snprintf(b + k, sizeof b - k, "]");
      return sm_status_new(SM_INVALID_ARGUMENT, "rt_input.shape and shape=%s are incompatible: rt_input.rank = %d but "
                           "shape.rank = %" PRId64, b, *rank, n);
    }
    for (int i = 0; i < *rank; i++) {
      out[i] = tx_int(shape, i);
      if (out[i] < -1) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid dimension size: %" PRId64, out[i]);
    }
  } else {
    return sm_status_new(SM_INVALID_ARGUMENT, "shape must be a vector, got shape: %s", tx_shape_of(shape).s);
  }
  for (int i = 1; i < vr; i++) {
    int o = i + st->ragged_rank;
    if (out[o] == -1) out[o] = vd[i];
    else if (out[o] != vd[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "rt_input.shape and shape are incompatible: rt_input.shape[%d] = %" PRId64
                           " but shape[%d] = %" PRId64, o, vd[i], o, out[o]);
  }
  return NULL;
}

static int64_t max_width(const sm_tensor *p, int type) {
  int64_t n = sm_tensor_num_elements(p), w = 0;
  if (type == RP_ROW_SPLITS) {
    for (int64_t i = 0; i + 1 < n; i++)
      if (tx_int(p, i + 1) - tx_int(p, i) > w) w = tx_int(p, i + 1) - tx_int(p, i);
    return w;
  }
  if (n == 0) return 0;
  int64_t first = 0, cur = tx_int(p, 0);
  for (int64_t i = 1; i < n; i++)
    if (tx_int(p, i) != cur) {
      cur = tx_int(p, i);
      if (i - first > w) w = i - first;
      first = i;
    }
  return n - first > w ? n - first : w;
}

/* One level of TF's CalculateOutputIndex: the output position (-1: dropped) of each row of the next
 * level, from the parent's (par[0..npar)). */
static sm_status *r2t_level(const sm_tensor *p, int type, const int64_t *par, int64_t npar, int64_t mult, int64_t size,
                            int64_t *out, int64_t *nout) {
  int64_t n = sm_tensor_num_elements(p), k = 0;
  if (type == RP_ROW_SPLITS) {
    if (n - 1 > npar)
      return sm_status_new(SM_INVALID_ARGUMENT, "Row partition size is greater than output size: %" PRId64 " > %" PRId64, n - 1,
                           npar);
    for (int64_t i = 0; i + 1 < n; i++) {
      int64_t len = tx_int(p, i + 1) - tx_int(p, i), real = len < size ? len : size, at = par[i];
      if (len < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid row split size.");
      if (at == -1) real = 0;
      for (int64_t j = 0; j < real; j++, at += mult) out[k++] = at;
      for (int64_t j = real; j < len; j++) out[k++] = -1;
    }
    if (n > 0 && k != tx_int(p, n - 1)) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid row split size.");
    *nout = k;
    return NULL;
  }
  if (type != RP_VALUE_ROWIDS) return sm_status_new(SM_INVALID_ARGUMENT, "Unsupported partition type:%s", rp_name(type));
  *nout = n;
  if (n == 0) return NULL;
  int64_t col = 0, row = tx_int(p, 0);
  if (row < 0 || row >= npar)
    return sm_status_new(SM_INVALID_ARGUMENT, "Got current_value_rowid=%" PRId64 " which is not less than %" PRId64, row, npar);
  int64_t at = par[row];
  out[0] = at;
  for (int64_t i = 1; i < n; i++) {
    int64_t next = tx_int(p, i);
    if (next == row) {
      if (at >= 0) at = ++col < size ? at + mult : -1;
    } else {
      col = 0, row = next;
      if (row < 0 || row >= npar)
        return sm_status_new(SM_INVALID_ARGUMENT, "Got next_value_rowid=%" PRId64 " which is not less than %" PRId64, row, npar);
      at = par[row];
    }
    out[i] = at;
  }
  return NULL;
}

static sm_status *r2t_compute(const void *state, sm_kctx *ctx) {
  const r2t_state *st = state;
  const sm_tensor *shape = sm__kctx_input(ctx, 0), *values = sm__kctx_input(ctx, 1), *dflt = sm__kctx_input(ctx, 2);
  if (st->ntypes == 0) return sm_status_new(SM_INVALID_ARGUMENT, "No row_partition_types given.");
  if (sm__kctx_num_inputs(ctx) != 3 + st->ntypes)
    return sm_status_new(SM_INVALID_ARGUMENT, "%d row_partition_tensors for %d row_partition_types",
                         sm__kctx_num_inputs(ctx) - 3, st->ntypes);
  for (int i = 0; i < st->ntypes; i++)
    if (!tx_is_index(sm__kctx_input(ctx, 3 + i)))
      return sm_status_new(SM_INVALID_ARGUMENT, "row_partition_tensors must be int32 or int64");
  if (!tx_is_index(shape) || sm_tensor_dtype(values) != sm_tensor_dtype(dflt))
    return sm_status_new(SM_INVALID_ARGUMENT, "shape must be int32 or int64, default_value of values' dtype");
  if (sm_tensor_rank(values) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "values must have rank >= 1");
  const sm_tensor *first = sm__kctx_input(ctx, 3);
  if (sm_tensor_num_elements(first) == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid first partition input. Tensor requires at least one element.");
  int64_t first_dim;
  if (st->types[0] == RP_FIRST_DIM_SIZE) {
    if (sm_tensor_rank(first) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "FIRST_DIM_SIZE must be a scalar");
    first_dim = tx_int(first, 0);
  } else if (st->types[0] == RP_VALUE_ROWIDS) {
    return sm_status_new(SM_INVALID_ARGUMENT, "Cannot handle VALUE_ROWIDS in first dimension.");
  } else {
    first_dim = sm_tensor_dims(first)[0] - 1;
  }
  for (int d = 0; d < st->ragged_rank; d++) {
    int t;
    const sm_tensor *p = r2t_part(st, ctx, d, &t);
    if (t == RP_FIRST_DIM_SIZE) return sm_status_new(SM_INVALID_ARGUMENT, "Cannot handle partition type FIRST_DIM_SIZE");
    if (sm_tensor_rank(p) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "row partition %d must be a vector", d);
  }
  int64_t dims[SM_MAX_RANK];
  int rank;
  sm_status *s = r2t_shape(st, shape, values, dflt, dims, &rank);
  if (s) return s;
  if (dims[0] == -1) dims[0] = first_dim < 0 ? 0 : first_dim;
  for (int i = 1; i <= st->ragged_rank; i++) {
    int t;
    const sm_tensor *p = r2t_part(st, ctx, i - 1, &t);
    if (dims[i] < 0) dims[i] = max_width(p, t);
  }
  for (int i = st->ragged_rank + 1; i < rank; i++)
    if (dims[i] < 0) dims[i] = 0;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(values), rank, dims, &y);
  if (s) return s;
  int64_t total = sm_tensor_num_elements(y);
  if (total == 0) return NULL;
  int64_t mult[SM_MAX_RANK + 1];
  mult[st->ragged_rank] = 1;
  for (int i = st->ragged_rank - 1; i >= 0; i--) mult[i] = mult[i + 1] * dims[i + 1];
  int64_t elem = 1; /* elements of one value row */
  for (int i = st->ragged_rank + 1; i < rank; i++) elem *= dims[i];
  /* default_value broadcast over the output first */
  int dr = sm_tensor_rank(dflt), er = rank - st->ragged_rank - 1;
  const int64_t *dd = sm_tensor_dims(dflt);
  for (int64_t o = 0; o < total && !s; o++) {
    int64_t e = o % elem, src = 0, stride = 1;
    for (int k = 1; k <= dr; k++) { /* trailing alignment; a dim of 1 repeats */
      int64_t dim = dims[rank - k], c = e % dim;
      e /= dim;
      if (dd[dr - k] != 1) src += c * stride;
      stride *= dd[dr - k];
    }
    (void)er;
    s = sm__array_copy(y, o, dflt, src, 1);
  }
  if (s) return s;
  /* the output position of every value row, level by level */
  int64_t nvals = sm_tensor_dims(values)[0];
  size_t cap = (size_t)(first_dim > nvals ? first_dim : nvals) + 1;
  for (int d = 0; d < st->ragged_rank; d++) {
    int t;
    int64_t n = sm_tensor_num_elements(r2t_part(st, ctx, d, &t));
    if ((size_t)n + 1 > cap) cap = (size_t)n + 1;
    if (t == RP_ROW_SPLITS && n > 0 && tx_int(r2t_part(st, ctx, d, &t), n - 1) + 1 > (int64_t)cap)
      cap = (size_t)tx_int(r2t_part(st, ctx, d, &t), n - 1) + 1;
  }
  int64_t *a = sm__kctx_scratch(ctx, cap * sizeof *a, &s), *b = a ? sm__kctx_scratch(ctx, cap * sizeof *b, &s) : NULL;
  if (!b) return s;
  int64_t na = first_dim < 0 ? 0 : first_dim;
  for (int64_t i = 0; i < na; i++) a[i] = i < dims[0] ? i * mult[0] : -1;
  for (int d = 0; d < st->ragged_rank && !s; d++) {
    int t;
    const sm_tensor *p = r2t_part(st, ctx, d, &t);
    int64_t nb = 0;
    s = r2t_level(p, t, a, na, mult[d + 1], dims[d + 1], b, &nb);
    int64_t *tmp = a;
    a = b, b = tmp, na = nb;
  }
  if (s) return s;
  if (na > nvals)
    return sm_status_new(SM_INVALID_ARGUMENT, "the row partitions name %" PRId64 " values, but values has %" PRId64, na, nvals);
  for (int64_t i = 0; i < na && !s; i++)
    if (a[i] >= 0) s = sm__array_copy(y, a[i] * elem, values, i * elem, elem);
  return s;
}

/* ---- RaggedGather ---------------------------------------------------------------------------- */

/* TF's RaggedGather: rows `indices` of a ragged tensor given by nested splits and dense values. The
 * output splits: first the uniform ones of indices' outer dimensions, then each gathered row's. */
static sm_status *gather_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int nout = sm__kctx_num_outputs(ctx), nin = sm__kctx_num_inputs(ctx), pr = nin - 2, orank = nout - 1;
  if (pr < 1) return sm_status_new(SM_INVALID_ARGUMENT, "RaggedGather needs params_nested_splits");
  const sm_tensor *vals = sm__kctx_input(ctx, pr), *idx = sm__kctx_input(ctx, pr + 1);
  int ir = sm_tensor_rank(idx);
  if (orank != pr + ir - 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "OUTPUT_RAGGED_RANK %d must be PARAMS_RAGGED_RANK %d + indices.rank %d - 1",
                         orank, pr, ir);
  if (!tx_is_index(idx)) return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int32 or int64");
  int sdt = sm_tensor_dtype(sm__kctx_input(ctx, 0));
  for (int d = 0; d < pr; d++) {
    const sm_tensor *sp = sm__kctx_input(ctx, d);
    if (sm_tensor_dtype(sp) != sdt || !tx_is_index(sp) || sm_tensor_rank(sp) != 1 || sm_tensor_dims(sp)[0] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "params_nested_splits[%d] must be a non-empty int32 or int64 vector", d);
  }
  if (sm_tensor_rank(vals) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "params.rank must be nonzero");
  /* the splits must describe the values: from 0, non-decreasing, each ending at the next's length */
  for (int d = 0; d < pr; d++) {
    const sm_tensor *sp = sm__kctx_input(ctx, d);
    int64_t n = sm_tensor_dims(sp)[0], next = d + 1 < pr ? sm_tensor_dims(sm__kctx_input(ctx, d + 1))[0] - 1
                                                       : sm_tensor_dims(vals)[0];
    if (tx_int(sp, 0) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "params_nested_splits[%d] must start with 0", d);
    for (int64_t i = 1; i < n; i++)
      if (tx_int(sp, i) < tx_int(sp, i - 1))
        return sm_status_new(SM_INVALID_ARGUMENT, "params_nested_splits[%d] must be non-decreasing", d);
    if (tx_int(sp, n - 1) > next)
      return sm_status_new(SM_INVALID_ARGUMENT, "params_nested_splits[%d] ends at %" PRId64 ", past %" PRId64 " rows", d,
                           tx_int(sp, n - 1), next);
  }
  int64_t nparams = sm_tensor_dims(sm__kctx_input(ctx, 0))[0] - 1, ni = sm_tensor_num_elements(idx);
  for (int64_t i = 0; i < ni; i++) {
    int64_t v = tx_int(idx, i);
    if (v < 0 || v >= nparams)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices[%" PRId64 "] = %" PRId64 " is not in [0, %" PRId64 ")", i, v, nparams);
  }
  /* sizes first: each output splits vector, and the values */
  int64_t counts[SM_MAX_RANK + 1] = {0}, nvals = 0;
  if (orank > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "OUTPUT_RAGGED_RANK %d is too large", orank);
  int64_t rows = 1;
  for (int d = 0; d + 1 < ir; d++) rows *= sm_tensor_dims(idx)[d], counts[d] = rows + 1;
  for (int d = 0; d < pr; d++)
    if (d + ir - 1 >= 0) counts[d + ir - 1] = 1;
  for (int64_t i = 0; i < ni; i++) {
    int64_t a = tx_int(idx, i), b = a + 1;
    for (int d = 0; d < pr; d++) {
      const sm_tensor *sp = sm__kctx_input(ctx, d);
      if (d + ir - 1 >= 0) counts[d + ir - 1] += b - a;
      a = tx_int(sp, a), b = tx_int(sp, b);
    }
    nvals += b - a;
  }
  sm_tensor *outs[SM_MAX_RANK + 1];
  sm_status *s = NULL;
  for (int d = 0; d < orank && !s; d++) s = sm__kctx_alloc_output(ctx, d, sdt, 1, &counts[d], &outs[d]);
  int64_t vdims[SM_MAX_RANK], elem = 1;
  vdims[0] = nvals;
  for (int k = 1; k < sm_tensor_rank(vals); k++) vdims[k] = sm_tensor_dims(vals)[k], elem *= vdims[k];
  sm_tensor *ov;
  if (!s) s = sm__kctx_alloc_output(ctx, orank, sm_tensor_dtype(vals), sm_tensor_rank(vals), vdims, &ov);
  if (s) return s;
  int64_t fill[SM_MAX_RANK + 1] = {0}; /* elements written to each output splits vector */
  rows = 1;
  for (int d = 0; d + 1 < ir; d++) {
    int64_t len = sm_tensor_dims(idx)[d + 1];
    rows *= sm_tensor_dims(idx)[d];
    for (int64_t i = 0; i <= rows; i++) tx_set_int(outs[d], fill[d]++, i * len);
  }
  for (int d = 0; d < pr; d++)
    if (d + ir - 1 >= 0) tx_set_int(outs[d + ir - 1], fill[d + ir - 1]++, 0);
  int64_t vo = 0;
  for (int64_t i = 0; i < ni && !s; i++) {
    int64_t a = tx_int(idx, i), b = a + 1;
    for (int d = 0; d < pr; d++) {
      const sm_tensor *sp = sm__kctx_input(ctx, d);
      int o = d + ir - 1;
      if (o >= 0) {
        int64_t delta = tx_int(outs[o], fill[o] - 1) - tx_int(sp, a);
        for (int64_t j = a; j < b; j++) tx_set_int(outs[o], fill[o]++, tx_int(sp, j + 1) + delta);
      }
      a = tx_int(sp, a), b = tx_int(sp, b);
    }
    s = sm__array_copy(ov, vo * elem, vals, a * elem, (b - a) * elem);
    vo += b - a;
  }
  return s;
}

/* ---- RaggedRange ----------------------------------------------------------------------------- */

static double num_at(const sm_tensor *t, int64_t i) {
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)sm_tensor_data(t))[i];
    case SM_DOUBLE: return ((const double *)sm_tensor_data(t))[i];
    default: return (double)tx_int(t, i);
  }
}

static sm_status *range_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in[3] = {sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2)};
  static const char *names[3] = {"starts", "limits", "deltas"};
  int dt = sm_tensor_dtype(in[0]), sdt = SM_INT64;
  const sm_node *node = sm__kctx_node(ctx);
  if (sm__node_attr(node, "Tsplits")) {
    sm_status *s = sm__node_attr_type(node, "Tsplits", &sdt);
    if (s) return s;
  }
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "RaggedRange of %s is not supported", sm_dtype_name(dt));
  int64_t n = 1;
  int vec = 0;
  for (int k = 0; k < 3; k++) {
    if (sm_tensor_dtype(in[k]) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "starts, limits and deltas must have one dtype");
    if (sm_tensor_rank(in[k]) > 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar or vector", names[k]);
  }
  for (int k = 0; k < 3; k++) {
    if (sm_tensor_rank(in[k]) != 1) continue;
    if (vec && sm_tensor_dims(in[k])[0] != n)
      return sm_status_new(SM_INVALID_ARGUMENT, "starts, limits, and deltas must have the same shape");
    n = sm_tensor_dims(in[k])[0], vec = 1;
  }
  int ints = dt == SM_INT32 || dt == SM_INT64;
  sm_tensor *splits, *vals;
  int64_t n1 = n + 1, total = 0;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sdt, 1, &n1, &splits);
  if (s) return s;
  tx_set_int(splits, 0, 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t ix[3];
    for (int k = 0; k < 3; k++) ix[k] = sm_tensor_rank(in[k]) ? i : 0;
    int64_t size;
    if (ints) {
      int64_t st = tx_int(in[0], ix[0]), lim = tx_int(in[1], ix[1]), d = tx_int(in[2], ix[2]);
      if (d == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Requires delta != 0");
      if ((d > 0 && lim < st) || (d < 0 && lim > st)) size = 0;
      else {
        uint64_t span = lim > st ? (uint64_t)lim - (uint64_t)st : (uint64_t)st - (uint64_t)lim;
        uint64_t ad = d > 0 ? (uint64_t)d : (uint64_t)0 - (uint64_t)d;
        uint64_t q = span / ad + (span % ad != 0);
        if (q > (uint64_t)INT64_MAX / 2) return sm_status_new(SM_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= %" PRId64, INT64_MAX);
        size = (int64_t)q;
      }
    } else {
      double st = num_at(in[0], ix[0]), lim = num_at(in[1], ix[1]), d = num_at(in[2], ix[2]);
      if (d == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Requires delta != 0");
      if ((d > 0 && lim < st) || (d < 0 && lim > st)) size = 0;
      else {
        double q = __builtin_ceil(__builtin_fabs((lim - st) / d));
        if (!(q <= 9.0e15)) return sm_status_new(SM_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= %" PRId64, INT64_MAX);
        size = (int64_t)q;
      }
    }
    if (__builtin_add_overflow(total, size, &total) || (sdt == SM_INT32 && total > INT32_MAX))
      return sm_status_new(SM_INVALID_ARGUMENT, "RaggedRange: the output is too large for its splits type");
    tx_set_int(splits, i + 1, total);
  }
  s = sm__kctx_alloc_output(ctx, 1, dt, 1, &total, &vals);
  if (s) return s;
  for (int64_t i = 0, o = 0; i < n; i++) { /* as TF: value += delta, accumulated (floats round so) */
    int64_t ix[3];
    for (int k = 0; k < 3; k++) ix[k] = sm_tensor_rank(in[k]) ? i : 0;
    int64_t size = tx_int(splits, i + 1) - tx_int(splits, i);
    void *out = sm_tensor_data(vals);
    if (dt == SM_FLOAT) {
      float v = ((const float *)sm_tensor_data(in[0]))[ix[0]], d = ((const float *)sm_tensor_data(in[2]))[ix[2]];
      for (int64_t j = 0; j < size; j++, v += d) ((float *)out)[o++] = v;
    } else if (dt == SM_DOUBLE) {
      double v = num_at(in[0], ix[0]), d = num_at(in[2], ix[2]);
      for (int64_t j = 0; j < size; j++, v += d) ((double *)out)[o++] = v;
    } else {
      uint64_t v = (uint64_t)tx_int(in[0], ix[0]), d = (uint64_t)tx_int(in[2], ix[2]); /* wraps as TF's does */
      for (int64_t j = 0; j < size; j++, v += d) tx_set_int(vals, o++, (int64_t)v);
    }
  }
  return NULL;
}

/* ---- RaggedBincount -------------------------------------------------------------------------- */

typedef struct bincount_state {
  int binary;
} bincount_state;

static sm_status *bincount_prepare(const sm_node *node, void **state) {
  int b = 0;
  if (sm__node_attr(node, "binary_output")) {
    sm_status *s = sm__node_attr_bool(node, "binary_output", &b);
    if (s) return s;
  }
  bincount_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->binary = b;
  *state = st;
  return NULL;
}

static sm_status *bincount_compute(const void *state, sm_kctx *ctx) {
  const bincount_state *st = state;
  const sm_tensor *splits = sm__kctx_input(ctx, 0), *values = sm__kctx_input(ctx, 1), *size_t_ = sm__kctx_input(ctx, 2),
                  *w = sm__kctx_input(ctx, 3);
  int wt = sm_tensor_dtype(w);
  if (sm_tensor_dtype(splits) != SM_INT64 || !tx_is_index(values) || sm_tensor_dtype(size_t_) != sm_tensor_dtype(values))
    return sm_status_new(SM_INVALID_ARGUMENT, "splits must be int64, values and size int32 or int64");
  if (wt != SM_FLOAT && wt != SM_DOUBLE && wt != SM_INT32 && wt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "RaggedBincount of %s weights is not supported", sm_dtype_name(wt));
  if (sm_tensor_rank(size_t_) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d", sm_tensor_rank(size_t_));
  int64_t size = tx_int(size_t_, 0);
  if (size < 0) return sm_status_new(SM_INVALID_ARGUMENT, "size (%" PRId64 ") must be non-negative", size);
  int64_t ns = sm_tensor_num_elements(splits), nv = sm_tensor_num_elements(values), nw = sm_tensor_num_elements(w);
  if (ns == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Splits must be non-empty");
  const int64_t *sp = sm_tensor_data(splits);
  if (sp[0] != 0) return sm_status_new(SM_INVALID_ARGUMENT, "Splits must start with 0, not with %" PRId64, sp[0]);
  if (sp[ns - 1] != nv)
    return sm_status_new(SM_INVALID_ARGUMENT, "Splits must end with the number of values, got %" PRId64 " instead of %" PRId64,
                         sp[ns - 1], nv);
  if (nw && nw != nv)
    return sm_status_new(SM_INVALID_ARGUMENT, "Weights and values must have the same shape. Weight shape: %s; values shape: %s",
                         tx_shape_of(w).s, tx_shape_of(values).s);
  for (int64_t i = 1; i < ns; i++)
    if (sp[i] < sp[i - 1]) return sm_status_new(SM_INVALID_ARGUMENT, "Splits must be non-decreasing");
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, wt, 2, (int64_t[]){ns - 1, size}, &y);
  if (s) return s;
  int64_t row = 0;
  for (int64_t i = 0; i < nv; i++) {
    while (row + 1 < ns && i >= sp[row + 1]) row++;
    int64_t bin = tx_int(values, i);
    if (bin < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Input must be non-negative");
    if (bin >= size) continue;
    int64_t o = row * size + bin;
    switch (wt) {
      case SM_FLOAT: {
        float *p = sm_tensor_data(y);
        p[o] = st->binary ? 1.0f : p[o] + (nw ? ((const float *)sm_tensor_data(w))[i] : 1.0f);
        break;
      }
      case SM_DOUBLE: {
        double *p = sm_tensor_data(y);
        p[o] = st->binary ? 1.0 : p[o] + (nw ? ((const double *)sm_tensor_data(w))[i] : 1.0);
        break;
      }
      default: tx_set_int(y, o, st->binary ? 1 : tx_int(y, o) + (nw ? tx_int(w, i) : 1));
    }
  }
  return NULL;
}

/* ---- RaggedTensorToSparse -------------------------------------------------------------------
 * inputs: RAGGED_RANK row_splits vectors (int32 or int64), then the flat values [n, d1..]. Each
 * value's index is [row, position in each ragged level..., inner index...], values in order (their
 * inner elements row-major); dense_shape = [rows, the widest row of each level..., d1..]. TF's
 * split checks and messages (ValidateInputs). */
static int64_t split_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
}

static sm_status *r2s_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int K = sm__kctx_num_inputs(ctx) - 1;
  if (K < 1) return sm_status_new(SM_INVALID_ARGUMENT, "rt_nested_splits must be non empty");
  const sm_tensor *vals = sm__kctx_input(ctx, K);
  if (sm_tensor_rank(vals) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "rt_dense_values must have rank >= 1");
  if (K + sm_tensor_rank(vals) > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "RaggedTensorToSparse: rank too large");
  for (int i = 0; i < K; i++) {
    const sm_tensor *sp = sm__kctx_input(ctx, i);
    int64_t n = sm_tensor_num_elements(sp);
    if (n == 0) return sm_status_new(SM_INVALID_ARGUMENT, "ragged splits may not be empty.");
    if (split_at(sp, 0) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "First value of ragged splits must be 0.");
    for (int64_t j = 1; j < n; j++)
      if (split_at(sp, j) < split_at(sp, j - 1))
        return sm_status_new(SM_INVALID_ARGUMENT, "Ragged splits should be non decreasing, but we got %lld followed by %lld",
                             (long long)split_at(sp, j - 1), (long long)split_at(sp, j));
    if (i > 0) {
      const sm_tensor *pp = sm__kctx_input(ctx, i - 1);
      if (n != split_at(pp, sm_tensor_num_elements(pp) - 1) + 1)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Final value of ragged splits must match the length the corresponding ragged values.");
    }
  }
  const sm_tensor *last = sm__kctx_input(ctx, K - 1);
  int64_t nv = split_at(last, sm_tensor_num_elements(last) - 1);
  if (sm_tensor_dims(vals)[0] != nv)
    return sm_status_new(SM_INVALID_ARGUMENT, "Final value of ragged splits must match the length the corresponding ragged values.");
  int64_t inner = nv ? sm_tensor_num_elements(vals) / nv : 0, R = K + sm_tensor_rank(vals);
  sm_tensor *ix, *shape;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){nv * inner, R}, &ix))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &R, &shape))) return st;
  int64_t *sh = sm_tensor_data(shape), *ip = sm_tensor_data(ix);
  sh[0] = sm_tensor_num_elements(sm__kctx_input(ctx, 0)) - 1;
  for (int i = 0; i < K; i++) {
    const sm_tensor *sp = sm__kctx_input(ctx, i);
    int64_t w = 0;
    for (int64_t j = 1; j < sm_tensor_num_elements(sp); j++)
      w = split_at(sp, j) - split_at(sp, j - 1) > w ? split_at(sp, j) - split_at(sp, j - 1) : w;
    sh[i + 1] = w;
  }
  for (int d = 1; d < sm_tensor_rank(vals); d++) sh[K + d] = sm_tensor_dims(vals)[d];
  /* each level's row ids (which row of splits i holds element j of level i + 1) */
  int64_t total = 0;
  for (int i = 0; i < K; i++) total += split_at(sm__kctx_input(ctx, i), sm_tensor_num_elements(sm__kctx_input(ctx, i)) - 1);
  int64_t *rowid = sm__kctx_scratch(ctx, (size_t)(total + 1) * sizeof *rowid, &st), *base[SM_MAX_RANK];
  if (!rowid) return st;
  int64_t off = 0;
  for (int i = 0; i < K; i++) {
    const sm_tensor *sp = sm__kctx_input(ctx, i);
    base[i] = rowid + off;
    for (int64_t r = 0; r + 1 < sm_tensor_num_elements(sp); r++)
      for (int64_t j = split_at(sp, r); j < split_at(sp, r + 1); j++) base[i][j] = r;
    off += split_at(sp, sm_tensor_num_elements(sp) - 1);
  }
  int rv = sm_tensor_rank(vals);
  for (int64_t v = 0, o = 0; v < nv; v++) {
    int64_t pre[SM_MAX_RANK], e = v;
    for (int i = K - 1; i >= 0; i--) { /* position of e within its row of level i, then that row */
      int64_t r = base[i][e];
      pre[i + 1] = e - split_at(sm__kctx_input(ctx, i), r);
      e = r;
    }
    pre[0] = e;
    for (int64_t q = 0; q < inner; q++, o++) {
      int64_t *row = ip + o * R, rem = q;
      memcpy(row, pre, (size_t)(K + 1) * sizeof *row);
      for (int d = rv - 1; d >= 1; d--) {
        row[K + d] = rem % sm_tensor_dims(vals)[d];
        rem /= sm_tensor_dims(vals)[d];
      }
    }
  }
  sm__kctx_scratch_free(ctx, rowid);
  sm_tensor *flat;
  if ((st = sm_tensor_view((sm_tensor *)vals, 1, (int64_t[]){sm_tensor_num_elements(vals)}, &flat))) return st;
  sm__kctx_set_output(ctx, 1, flat);
  return NULL;
}

const sm_kernel sm_kernels_ragged[] = {
    {"RaggedTensorToSparse", NULL, r2s_compute, NULL, 0},
    {"RaggedTensorToTensor", r2t_prepare, r2t_compute, sm__free, 0},
    {"RaggedRange", NULL, range_compute, NULL, 0},
    {"RaggedGather", NULL, gather_compute, NULL, 0},
    {"RaggedBincount", bincount_prepare, bincount_compute, sm__free, 0},
    {0},
};
