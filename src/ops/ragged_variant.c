/* ragged_variant.c - RaggedTensors as DT_VARIANT values (tf.map_fn over a RaggedTensor, and a
 * ragged fn_output_signature), with TensorFlow's semantics (ragged_tensor_to_variant_op.cc,
 * ragged_tensor_from_variant_op.cc, ragged_tensor_variant.h):
 *   RaggedTensorToVariant: (nested splits, flat values) -> a scalar variant holding them as they
 *   are, or (batched_input) a [nrows] vector of variants, row i's ragged tensor with one ragged
 *   level less (splits rebased to 0; RAGGED_RANK 0: the values' rows).
 *   RaggedTensorFromVariant: a variant tensor of any shape whose elements all hold ragged tensors of
 *   input_ragged_rank levels -> one ragged tensor of output_ragged_rank levels: uniform splits for
 *   the variant tensor's own dims, then each element's rows, their splits concatenated (offset) and
 *   their values stacked.
 * The variant object is refcounted as the TensorList is (base/variant.h, list.c): it holds
 * references to its splits and values tensors, which are never written once in it, so a
 * TensorList of them (TensorListFromTensor / GetItem / SetItem / Stack in map_fn's loop) moves
 * pointers only. Splits are checked as TF's RaggedTensorVerifySplits (ragged_internal.h, shared with
 * RaggedCross); TF's messages for bad input. Checked against TensorFlow by tests/unit/test_ops_c2.c
 * (tools/gen_c2_cases.py: round trips, since TF's eager variants cannot be written to a fixture). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/variant.h"
#include "ops/array_internal.h"
#include "ops/ragged_internal.h"
#include "runtime/kernel.h"

#define RV_TYPE "tensorflow::RaggedTensorVariant"
#define BAD(...) sm_status_new(SM_INVALID_ARGUMENT, __VA_ARGS__)

typedef struct rvar {
  sm_variant v; /* first: the tensor holds &v */
  sm_tensor *values;
  int nsplits;
  sm_tensor *splits[]; /* nsplits references */
} rvar;

static void rvar_release(sm_variant *v) {
  rvar *r = (rvar *)v;
  for (int i = 0; i < r->nsplits; i++) sm_tensor_free(r->splits[i]);
  sm_tensor_free(r->values);
  sm__free(r);
}

/* A new object taking over the references values and splits[0..n) (released on failure). */
static sm_status *rvar_new(sm_tensor *values, sm_tensor **splits, int n, rvar **out) {
  rvar *r = sm__calloc(sizeof *r + (size_t)n * sizeof(sm_tensor *));
  if (!r) {
    sm_tensor_free(values);
    for (int i = 0; i < n; i++) sm_tensor_free(splits[i]);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a RaggedTensorVariant");
  }
  sm__variant_init(&r->v, RV_TYPE, rvar_release);
  r->values = values;
  r->nsplits = n;
  for (int i = 0; i < n; i++) r->splits[i] = splits[i];
  *out = r;
  return NULL;
}

int64_t sm__ragged_split_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
}

sm_status *sm__ragged_verify_splits(const sm_tensor *sp, int64_t nvalues) {
  if (sm_tensor_rank(sp) != 1)
    return BAD("Invalid ragged splits: ragged splits must be rank 1 but is rank %d", sm_tensor_rank(sp));
  if (sm_tensor_dtype(sp) != SM_INT32 && sm_tensor_dtype(sp) != SM_INT64)
    return BAD("Invalid ragged splits: ragged splits must be int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(sp)));
  int64_t n = sm_tensor_num_elements(sp);
  if (n < 1) return BAD("Invalid ragged splits: ragged splits must have at least one splits, but is empty");
  if (sm__ragged_split_at(sp, 0) != 0)
    return BAD("Invalid ragged splits: first element of ragged splits  must be 0 but is %" PRId64, sm__ragged_split_at(sp, 0));
  int64_t last = 0;
  for (int64_t j = 1; j < n; j++) {
    int64_t v = sm__ragged_split_at(sp, j);
    if (v < last)
      return BAD("Invalid ragged splits: ragged splits must be monotonically increasing, but ragged_splits[%" PRId64 "]=%" PRId64
                 " is smaller than row_splits[%" PRId64 "]=%" PRId64, j, v, j - 1, last);
    last = v;
  }
  if (last != nvalues)
    return BAD("Invalid ragged splits: last element of ragged splits must be the number of ragged values(%" PRId64 ") but is %" PRId64,
               nvalues, last);
  return NULL;
}

/* A new 1-D splits tensor of dtype dt: v[0..n) - base. */
static sm_status *splits_of(int dt, const sm_tensor *src, int64_t from, int64_t n, int64_t base, sm_tensor **out) {
  sm_status *s = sm_tensor_new(dt, 1, &n, out);
  if (s) return s;
  for (int64_t k = 0; k < n; k++) {
    int64_t v = sm__ragged_split_at(src, from + k) - base;
    if (dt == SM_INT32) ((int32_t *)sm_tensor_data(*out))[k] = (int32_t)v;
    else ((int64_t *)sm_tensor_data(*out))[k] = v;
  }
  return NULL;
}

/* ---- RaggedTensorToVariant ------------------------------------------------------------------ */
typedef struct to_state {
  int batched;
} to_state;

static sm_status *to_prepare(const sm_node *node, void **state) {
  to_state *s = sm__calloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  sm_status *st = sm__node_attr_bool(node, "batched_input", &s->batched);
  if (st) {
    sm__free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *to_compute(const void *state, sm_kctx *ctx) {
  const to_state *s = state;
  int n = sm__kctx_num_inputs(ctx) - 1;
  if (n < 0 || n > SM_MAX_RANK) return BAD("RaggedTensorToVariant: %d splits", n);
  const sm_tensor *values = sm__kctx_input(ctx, n);
  sm_status *st = NULL;
  if (n && sm_tensor_rank(values) < 1) return BAD("RaggedTensorToVariant: rt_dense_values must have rank >= 1 when there are splits");
  /* every level checked as TF does: level i's last split is level i + 1's length */
  for (int i = 0; i < n && !st; i++) {
    const sm_tensor *sp = sm__kctx_input(ctx, i);
    int64_t len = i + 1 < n ? sm_tensor_num_elements(sm__kctx_input(ctx, i + 1)) - 1
                            : sm_tensor_rank(values) ? sm_tensor_dims(values)[0] : 1;
    if (i + 1 < n && len < 0) len = 0;
    st = sm__ragged_verify_splits(sp, len);
  }
  if (st) return st;
  sm_tensor *out;
  if (!s->batched) {
    sm_tensor *sp[SM_MAX_RANK];
    for (int i = 0; i < n; i++) sp[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(ctx, i));
    rvar *r;
    if ((st = rvar_new(sm_tensor_ref((sm_tensor *)values), sp, n, &r))) return st;
    if ((st = sm__kctx_alloc_output(ctx, 0, SM_VARIANT, 0, NULL, &out))) {
      rvar_release(&r->v);
      return st;
    }
    sm__tensor_variants(out)[0] = &r->v;
    return NULL;
  }
  /* unbatch along dim 0 */
  if (!n && sm_tensor_rank(values) < 1) return BAD("Unable to unbatch a scalar values Tensor");
  int64_t rows = n ? sm_tensor_num_elements(sm__kctx_input(ctx, 0)) - 1 : sm_tensor_dims(values)[0];
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_VARIANT, 1, &rows, &out))) return st;
  for (int64_t i = 0; i < rows && !st; i++) {
    sm_tensor *sp[SM_MAX_RANK] = {0}, *vals = NULL;
    int64_t a = i, b = i + 1; /* the row's range at the current level */
    for (int k = 0; k < n && !st; k++) {
      const sm_tensor *src = sm__kctx_input(ctx, k);
      int64_t na = sm__ragged_split_at(src, a), nb = sm__ragged_split_at(src, b);
      if (k) st = splits_of(sm_tensor_dtype(src), src, a, b - a + 1, sm__ragged_split_at(src, a), &sp[k - 1]);
      a = na, b = nb;
    }
    if (!st && n) st = sm__array_rows(values, a, b, &vals);
    else if (!st) { /* RAGGED_RANK 0: row i of the values, one dim less */
      if (!(st = sm__array_rows(values, i, i + 1, &vals))) {
        sm_tensor *row = NULL;
        st = sm_tensor_view(vals, sm_tensor_rank(values) - 1, sm_tensor_dims(values) + 1, &row);
        sm_tensor_free(vals);
        vals = row;
      }
    }
    rvar *r = NULL;
    if (!st) st = rvar_new(vals, sp, n ? n - 1 : 0, &r);
    else {
      for (int k = 0; k < n; k++) sm_tensor_free(sp[k]);
    }
    if (!st) sm__tensor_variants(out)[i] = &r->v;
  }
  return st;
}

/* ---- RaggedTensorFromVariant ---------------------------------------------------------------- */
typedef struct from_state {
  int64_t in_rank, out_rank;
  int tvalues, tsplits;
} from_state;

static sm_status *from_prepare(const sm_node *node, void **state) {
  from_state *s = sm__calloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->tsplits = SM_INT64;
  sm_status *st = sm__node_attr_int(node, "input_ragged_rank", &s->in_rank);
  if (!st) st = sm__node_attr_int(node, "output_ragged_rank", &s->out_rank);
  if (!st) st = sm__node_attr_type(node, "Tvalues", &s->tvalues);
  if (!st && sm__node_attr(node, "Tsplits")) st = sm__node_attr_type(node, "Tsplits", &s->tsplits);
  if (!st && s->in_rank < -1) st = BAD("Value for attr 'input_ragged_rank' of %" PRId64 " must be at least minimum -1", s->in_rank);
  if (!st && s->out_rank < 0) st = BAD("Value for attr 'output_ragged_rank' of %" PRId64 " must be at least minimum 0", s->out_rank);
  if (!st && s->out_rank > SM_MAX_RANK) st = BAD("output_ragged_rank %" PRId64 " is too large", s->out_rank);
  if (st) {
    sm__free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* A scalar's value as TF's SummarizeValue prints it (numbers; others "..."). */
static const char *scalar_str(const sm_tensor *t, char *b, size_t cap) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: snprintf(b, cap, "%.9g", ((const float *)p)[0]); break;
    case SM_DOUBLE: snprintf(b, cap, "%.17g", ((const double *)p)[0]); break;
    default:
      if (sm__array_is_int(sm_tensor_dtype(t))) snprintf(b, cap, "%" PRId64, sm__array_int_at(t, 0));
      else snprintf(b, cap, "...");
  }
  return b;
}

static void put_split(sm_tensor *t, int64_t i, int64_t v) {
  if (sm_tensor_dtype(t) == SM_INT32) ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
  else ((int64_t *)sm_tensor_data(t))[i] = v;
}

static sm_status *from_compute(const void *state, sm_kctx *ctx) {
  const from_state *s = state;
  const sm_tensor *enc = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(enc) != SM_VARIANT) return BAD("encoded_ragged must be a variant tensor");
  int dims = sm_tensor_rank(enc);
  int64_t in_rank = s->in_rank, out_rank = s->out_rank;
  if (in_rank == -1) {
    in_rank = out_rank - dims;
    if (out_rank == 0 && in_rank < 0) in_rank = out_rank;
    if (in_rank < 0)
      return BAD("Inferred input_ragged_rank (output_ragged_rank - encoded_variant.dims()) must be >= 0, found output_ragged_rank: %" PRId64
                 ", encoded_variant.dims(): %d, inferred input_ragged_rank: %" PRId64, out_rank, dims, in_rank);
  }
  if (!((out_rank == 0 && in_rank == 0) || out_rank == dims + in_rank))
    return BAD("output_ragged_rank must be equal to input_ragged_rank + encoded_ragged.dims(); output_ragged_rank: %" PRId64
               ", input_ragged_rank: %" PRId64 ", encoded_variant.dims(): %d.", out_rank, in_rank, dims);
  int64_t n = sm_tensor_num_elements(enc);
  sm_variant **vs = sm__tensor_variants(enc);
  for (int64_t i = 0; i < n; i++) {
    const sm_variant *v = vs ? vs[i] : NULL;
    if (!v || strcmp(v->type_name, RV_TYPE))
      return BAD("Input Variant element at index %" PRId64 " doesn't hold a RaggedTensorVariant: %s", i, v ? v->type_name : "[empty variant]");
    const rvar *r = (const rvar *)v;
    if (r->nsplits != in_rank)
      return BAD("Encoded input RaggedTensorVariant has ragged_rank=%d.  Expected ragged_rank=%" PRId64 ".", r->nsplits, in_rank);
    if (sm_tensor_dtype(r->values) != s->tvalues)
      return BAD("Expected values Tensor dtype: %s, found: %s", sm__array_dtype_str(s->tvalues), sm__array_dtype_str(sm_tensor_dtype(r->values)));
    for (int k = 0; k < r->nsplits; k++)
      if (sm_tensor_dtype(r->splits[k]) != s->tsplits)
        return BAD("Expected row_splits Tensor dtype: %s, found: %s", sm__array_dtype_str(s->tsplits),
                   sm__array_dtype_str(sm_tensor_dtype(r->splits[k])));
    if (dims && out_rank && sm_tensor_rank(r->values) < 1) {
      char b[64];
      return BAD("Ragged values must have rank >= 1; encoded scalar element at index %" PRId64 " has values Tensor: Tensor<type: %s "
                 "shape: [] values: %s>", i, sm__array_dtype_str(sm_tensor_dtype(r->values)), scalar_str(r->values, b, sizeof b));
    }
    if (i && dims && !out_rank) { /* stacked as a dense tensor: every shape the same */
      const sm_tensor *v0 = ((const rvar *)vs[0])->values;
      int same = sm_tensor_rank(v0) == sm_tensor_rank(r->values);
      for (int d = 0; same && d < sm_tensor_rank(v0); d++) same = sm_tensor_dims(v0)[d] == sm_tensor_dims(r->values)[d];
      if (!same) {
        char a[128], b[128];
        return BAD("All flat_values must have compatible shapes.  Shape at index 0: %s.  Shape at index %" PRId64 ": %s",
                   sm__array_shape_str(v0, a, sizeof a), i, sm__array_shape_str(r->values, b, sizeof b));
      }
      continue;
    }
    if (i && sm_tensor_rank(r->values) != sm_tensor_rank(((const rvar *)vs[0])->values)) {
      char a[128], b[128];
      return BAD("Rank of values must match for all components; values shape at index 0: %s, values shape at index %" PRId64 ": %s",
                 sm__array_shape_str(((const rvar *)vs[0])->values, a, sizeof a), i, sm__array_shape_str(r->values, b, sizeof b));
    }
    if (i)
      for (int d = 1; d < sm_tensor_rank(r->values); d++)
        if (sm_tensor_dims(r->values)[d] != sm_tensor_dims(((const rvar *)vs[0])->values)[d]) {
          char a[128], b[128];
          const sm_tensor *v0 = ((const rvar *)vs[0])->values;
          return BAD("All flat_values must have compatible shapes.  Shape at index 0: %s.  Shape at index %" PRId64 ": %s.  If you are "
                     "using tf.map_fn, then you may need to specify an explicit fn_output_signature with appropriate ragged_rank, "
                     "and/or convert output tensors to RaggedTensors.", sm_shape_str(sm_tensor_rank(v0) - 1, sm_tensor_dims(v0) + 1, a, sizeof a),
                     i, sm_shape_str(sm_tensor_rank(r->values) - 1, sm_tensor_dims(r->values) + 1, b, sizeof b));
        }
  }
  sm_status *st;
  if (dims == 0) { /* the element as it is */
    const rvar *r = (const rvar *)vs[0];
    for (int k = 0; k < r->nsplits; k++) sm__kctx_set_output(ctx, k, sm_tensor_ref(r->splits[k]));
    sm__kctx_set_output(ctx, r->nsplits, sm_tensor_ref(r->values));
    return NULL;
  }
  if (!out_rank) { /* dense: the elements' values stacked under the variant tensor's shape */
    int64_t vd[SM_MAX_RANK];
    const sm_tensor *v0 = n ? ((const rvar *)vs[0])->values : NULL;
    int vr = v0 ? sm_tensor_rank(v0) : 0;
    if (dims + vr > SM_MAX_RANK) return BAD("stacked values rank too large");
    memcpy(vd, sm_tensor_dims(enc), (size_t)dims * sizeof *vd);
    if (vr) memcpy(vd + dims, sm_tensor_dims(v0), (size_t)vr * sizeof *vd);
    sm_tensor *t;
    if ((st = sm__kctx_alloc_output(ctx, 0, s->tvalues, dims + vr, vd, &t))) return st;
    int64_t m = v0 ? sm_tensor_num_elements(v0) : 0;
    for (int64_t i = 0; i < n && m; i++)
      if ((st = sm__array_copy(t, i * m, ((const rvar *)vs[i])->values, 0, m))) return st;
    return NULL;
  }
  /* the variant tensor's own dims as uniform splits: level k (< dims - 1) has prod(dims[..k]) rows */
  const int64_t *ed = sm_tensor_dims(enc);
  int64_t rows = 1;
  for (int k = 0; k < dims - 1; k++) {
    rows *= ed[k];
    sm_tensor *t;
    if ((st = sm__kctx_alloc_output(ctx, k, s->tsplits, 1, (int64_t[]){rows + 1}, &t))) return st;
    for (int64_t j = 0; j <= rows; j++) put_split(t, j, j * ed[k + 1]);
  }
  /* level dims - 1: each element's row count; then each element's levels concatenated */
  sm_tensor *t;
  if ((st = sm__kctx_alloc_output(ctx, dims - 1, s->tsplits, 1, (int64_t[]){n + 1}, &t))) return st;
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    const rvar *r = (const rvar *)vs[i];
    acc += r->nsplits ? sm_tensor_num_elements(r->splits[0]) - 1 : sm_tensor_dims(r->values)[0];
    put_split(t, i + 1, acc);
  }
  for (int k = 0; k < in_rank; k++) {
    int64_t len = 1;
    for (int64_t i = 0; i < n; i++) len += sm_tensor_num_elements(((const rvar *)vs[i])->splits[k]) - 1;
    if ((st = sm__kctx_alloc_output(ctx, dims + k, s->tsplits, 1, &len, &t))) return st;
    int64_t o = 1, off = 0;
    for (int64_t i = 0; i < n; i++) {
      const sm_tensor *sp = ((const rvar *)vs[i])->splits[k];
      int64_t m = sm_tensor_num_elements(sp);
      for (int64_t j = 1; j < m; j++) put_split(t, o++, off + sm__ragged_split_at(sp, j));
      if (m) off += sm__ragged_split_at(sp, m - 1);
    }
  }
  /* the values stacked along dim 0 (no elements: [0]) */
  int64_t vd[SM_MAX_RANK] = {0}, inner = 1;
  int vr = 1;
  if (n) {
    const sm_tensor *v0 = ((const rvar *)vs[0])->values;
    vr = sm_tensor_rank(v0);
    memcpy(vd, sm_tensor_dims(v0), (size_t)vr * sizeof *vd);
    vd[0] = 0;
    for (int d = 1; d < vr; d++) inner *= vd[d];
    for (int64_t i = 0; i < n; i++) vd[0] += sm_tensor_dims(((const rvar *)vs[i])->values)[0];
  }
  if ((st = sm__kctx_alloc_output(ctx, (int)out_rank, s->tvalues, vr, vd, &t))) return st;
  int64_t o = 0;
  for (int64_t i = 0; i < n; i++) {
    const sm_tensor *v = ((const rvar *)vs[i])->values;
    int64_t m = sm_tensor_num_elements(v);
    if (m && (st = sm__array_copy(t, o, v, 0, m))) return st;
    o += m;
  }
  (void)inner;
  return NULL;
}

const sm_kernel sm_kernels_ragged_variant[] = {
    {"RaggedTensorToVariant", to_prepare, to_compute, sm__free, 0},
    {"RaggedTensorFromVariant", from_prepare, from_compute, sm__free, 0},
    {0},
};
