/* ragged_fill.c - RaggedFillEmptyRows (tf.ragged's fill of empty rows, the ragged twin of
 * SparseFillEmptyRows): value_rowids [N] (int64, any order), values [N] of any dtype, nrows and
 * default_value scalars give the rows' values grouped by row (input order within a row) with one
 * default_value in every empty row, the empty-row indicator and each input's position in the
 * output. TF's algorithm and messages (fill_empty_rows_functor.h); nrows is bounded by what the
 * outputs may allocate. Checked against TensorFlow by tests/unit/test_ops_e6.c
 * (tools/gen_e6_cases.py). */
#include <string.h>

#include "ops/array_internal.h"

static sm_status *ragged_fill_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ids = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *nt = sm__kctx_input(ctx, 2),
                  *def = sm__kctx_input(ctx, 3);
  char a[64];
  if (sm_tensor_rank(ids) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "value_rowids must be a vector, saw: %s", sm__array_shape_str(ids, a, sizeof a));
  if (sm_tensor_rank(vals) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "values must be a vector, saw: %s", sm__array_shape_str(vals, a, sizeof a));
  int64_t n = sm_tensor_dims(ids)[0];
  if (sm_tensor_dims(vals)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "The length of `values` (%lld) must match the first dimension of `value_rowids` (%lld).",
                         (long long)sm_tensor_dims(vals)[0], (long long)n);
  if (sm_tensor_rank(def) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "default_value must be a scalar, saw: %s", sm__array_shape_str(def, a, sizeof a));
  if (sm_tensor_rank(nt) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "nrows must be a scalar, saw: %s", sm__array_shape_str(nt, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(ids)) || !sm__array_is_int(sm_tensor_dtype(nt)) ||
      sm_tensor_dtype(def) != sm_tensor_dtype(vals))
    return sm_status_new(SM_INVALID_ARGUMENT, "RaggedFillEmptyRows: value_rowids and nrows must be int64, default_value of values' dtype");
  int64_t rows = sm__array_int_at(nt, 0);
  if (rows < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape dimensions to be non-negative, got %lld", (long long)rows);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = sm__array_int_at(ids, i);
    if (r < 0 || r >= rows)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices(%lld, 0) is invalid: %lld >= %lld", (long long)i, (long long)r, (long long)rows);
  }
  sm_tensor *empty, *rev;
  sm_status *st = sm__kctx_alloc_output(ctx, 2, SM_BOOL, 1, &rows, &empty);
  if (!st) st = sm__kctx_alloc_output(ctx, 3, SM_INT64, 1, &n, &rev);
  if (st) return st;
  /* per row: its count, then (TF's scratch) the offset of its first output */
  int64_t *off = sm__kctx_scratch(ctx, (size_t)(rows + 1) * sizeof *off, &st);
  if (!off) return st;
  memset(off, 0, (size_t)(rows + 1) * sizeof *off);
  for (int64_t i = 0; i < n; i++) off[sm__array_int_at(ids, i)]++;
  uint8_t *e = sm_tensor_data(empty);
  int64_t total = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t c = off[r];
    e[r] = c == 0;
    off[r] = total;
    total += c ? c : 1;
  }
  sm_tensor *oids, *ovals;
  int64_t od[2] = {total, 1}; /* no rows: TF returns its [N, 1] indices as they are (N is 0 then) */
  st = sm__kctx_alloc_output(ctx, 0, SM_INT64, rows ? 1 : 2, od, &oids);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(vals), 1, &total, &ovals);
  if (st) return st;
  int64_t *oi = sm_tensor_data(oids), *rv = sm_tensor_data(rev);
  for (int64_t r = 0; r < rows && !st; r++)
    if (e[r]) {
      oi[off[r]] = r;
      st = sm__array_copy(ovals, off[r], def, 0, 1);
    }
  for (int64_t i = 0; i < n && !st; i++) {
    int64_t r = sm__array_int_at(ids, i), at = off[r]++;
    oi[at] = r;
    rv[i] = at;
    st = sm__array_copy(ovals, at, vals, i, 1);
  }
  return st;
}

const sm_kernel sm_kernels_ragged_fill[] = {
    {"RaggedFillEmptyRows", NULL, ragged_fill_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
