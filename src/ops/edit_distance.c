/* edit_distance.c - the edit_distance kernel family: EditDistance (tf.edit_distance), as TF's
 * edit_distance_op.cc. Two SparseTensors (indices [N, R] int64, values [N], shape [R]) whose last
 * dimension holds the sequences; the entries are grouped by their first R - 1 indices (runs of
 * equal prefixes, in the order given: TF assumes row-major sorted indices), groups of both walked
 * in lexicographic order. Output float [max(hyp_shape, truth_shape) over the first R - 1 dims]:
 * the Levenshtein distance of each pair (divided by the truth's length with normalize), a group
 * only in hypothesis gives its length (inf normalized, 0 stays 0), one only in truth its length (1
 * normalized), positions in neither 0. Values compare as TF's std::equal_to (floats by value:
 * -0 == 0, NaN never equal; strings by bytes). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "runtime/kernel.h"

static sm_status *ed_prepare(const sm_node *node, void **state) {
  int *norm = calloc(1, sizeof *norm);
  if (!norm) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *norm = 1;
  sm_status *st = sm__node_attr(node, "normalize") ? sm__node_attr_bool(node, "normalize", norm) : NULL;
  if (st) {
    free(norm);
    return st;
  }
  *state = norm;
  return NULL;
}

/* values[i] == values[j] of two tensors of one dtype */
static int same(const sm_tensor *a, int64_t i, const sm_tensor *b, int64_t j) {
  int dt = sm_tensor_dtype(a);
  if (dt == SM_STRING) {
    size_t n, m;
    const char *p = sm_tensor_string(a, i, &n), *q = sm_tensor_string(b, j, &m);
    return n == m && !memcmp(p, q, n);
  }
  if (dt == SM_FLOAT) return ((const float *)sm_tensor_data(a))[i] == ((const float *)sm_tensor_data(b))[j];
  if (dt == SM_DOUBLE) return ((const double *)sm_tensor_data(a))[i] == ((const double *)sm_tensor_data(b))[j];
  if (dt == SM_HALF || dt == SM_BFLOAT16) {
    uint16_t x = ((const uint16_t *)sm_tensor_data(a))[i], y = ((const uint16_t *)sm_tensor_data(b))[j];
    float fx = dt == SM_HALF ? sm__half_to_f32(x) : sm__bf16_to_f32(x), fy = dt == SM_HALF ? sm__half_to_f32(y) : sm__bf16_to_f32(y);
    return fx == fy;
  }
  size_t es = sm_tensor_nbytes(a) / (size_t)sm_tensor_num_elements(a);
  return !memcmp((const char *)sm_tensor_data(a) + (size_t)i * es, (const char *)sm_tensor_data(b) + (size_t)j * es, es);
}

/* Levenshtein distance of a[a0..a0+n) and b[b0..b0+m) with one row of scratch (m + 1). */
static int64_t levenshtein(const sm_tensor *a, int64_t a0, int64_t n, const sm_tensor *b, int64_t b0, int64_t m, int64_t *row) {
  if (n == 0) return m;
  if (m == 0) return n;
  for (int64_t j = 0; j <= m; j++) row[j] = j;
  for (int64_t i = 1; i <= n; i++) {
    int64_t diag = row[0];
    row[0] = i;
    for (int64_t j = 1; j <= m; j++) {
      int64_t up = row[j];
      int64_t best = diag + !same(a, a0 + i - 1, b, b0 + j - 1);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m];
}

/* -1, 0, 1: the first r - 1 indices of row i of x against row j of y */
static int prefix_cmp(const int64_t *x, int64_t i, const int64_t *y, int64_t j, int64_t r) {
  for (int64_t d = 0; d + 1 < r; d++) {
    int64_t u = x[i * r + d], v = y[j * r + d];
    if (u != v) return u < v ? -1 : 1;
  }
  return 0;
}

static int64_t group_end(const int64_t *ix, int64_t n, int64_t at, int64_t r) {
  int64_t e = at + 1;
  while (e < n && prefix_cmp(ix, e, ix, at, r) == 0) e++;
  return e;
}

static sm_status *ed_compute(const void *state, sm_kctx *ctx) {
  int normalize = *(const int *)state;
  const sm_tensor *hi = sm__kctx_input(ctx, 0), *hv = sm__kctx_input(ctx, 1), *hs = sm__kctx_input(ctx, 2);
  const sm_tensor *ti = sm__kctx_input(ctx, 3), *tv = sm__kctx_input(ctx, 4), *ts = sm__kctx_input(ctx, 5);
  char b1[96], b2[96];
#define SHP(t, b) sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b)
  if (sm_tensor_rank(hi) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "hypothesis_indices should be a matrix, but got shape: %s", SHP(hi, b1));
  if (sm_tensor_rank(ti) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "truth_indices should be a matrix, but got shape: %s", SHP(ti, b1));
  if (sm_tensor_rank(hv) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "hypothesis_values should be a vector, but got shape: %s", SHP(hv, b1));
  if (sm_tensor_rank(tv) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "truth_values should be a vector, but got shape: %s", SHP(tv, b1));
  if (sm_tensor_rank(hs) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "hypothesis_shape should be a vector, but got shape: %s", SHP(hs, b1));
  if (sm_tensor_rank(ts) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "truth_shape should be a vector, but got shape: %s", SHP(ts, b1));
  if (sm_tensor_dtype(hi) != SM_INT64 || sm_tensor_dtype(ti) != SM_INT64 || sm_tensor_dtype(hs) != SM_INT64 ||
      sm_tensor_dtype(ts) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "EditDistance: indices and shapes must be int64");
  if (sm_tensor_dtype(hv) != sm_tensor_dtype(tv) || sm_tensor_dtype(hv) == SM_RESOURCE || sm_tensor_dtype(hv) == SM_VARIANT)
    return sm_status_new(SM_INVALID_ARGUMENT, "EditDistance: hypothesis and truth values must have one comparable dtype");
  if (sm_tensor_num_elements(hv) != sm_tensor_dims(hi)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected hypothesis_values.NumElements == #rows(hypothesis_indices), their shapes are: %s and %s",
                         SHP(hv, b1), SHP(hi, b2));
  if (sm_tensor_num_elements(hs) != sm_tensor_dims(hi)[1])
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected hypothesis_shape.NumElements == #cols(hypothesis_indices), their shapes are: %s and %s",
                         SHP(hs, b1), SHP(hi, b2));
  if (sm_tensor_num_elements(tv) != sm_tensor_dims(ti)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected truth_values.NumElements == #rows(truth_indices), their shapes are: %s and %s",
                         SHP(tv, b1), SHP(ti, b2));
  if (sm_tensor_num_elements(ts) != sm_tensor_dims(ti)[1])
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected truth_shape.NumElements == #cols(truth_indices), their shapes are: %s and %s",
                         SHP(ts, b1), SHP(ti, b2));
  if (sm_tensor_num_elements(ts) < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input SparseTensors must have rank at least 2, but truth_shape rank is: %" PRId64,
                         sm_tensor_num_elements(ts));
  if (sm_tensor_num_elements(hs) != sm_tensor_num_elements(ts))
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected hypothesis_shape.NumElements == truth_shape.NumElements(), but got: %" PRId64 " and %" PRId64,
                         sm_tensor_num_elements(hs), sm_tensor_num_elements(ts));
#undef SHP
  int64_t r = sm_tensor_num_elements(ts), nh = sm_tensor_dims(hi)[0], nt = sm_tensor_dims(ti)[0];
  const int64_t *HS = sm_tensor_data(hs), *TS = sm_tensor_data(ts), *HI = sm_tensor_data(hi), *TI = sm_tensor_data(ti);
  int64_t od[SM_MAX_RANK], total = 1;
  for (int64_t d = 0; d + 1 < r; d++) {
    if (HS[d] < 0 || TS[d] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "EditDistance: negative dense shape");
    od[d] = HS[d] > TS[d] ? HS[d] : TS[d];
    if (od[d] && total > INT64_MAX / od[d]) return sm_status_new(SM_INVALID_ARGUMENT, "EditDistance: output too large");
    total *= od[d];
  }
  if (total <= 0) {
    char b[96];
    return sm_status_new(SM_INVALID_ARGUMENT, "Got output shape %s which has 0 elements", sm_shape_str((int)(r - 1), od, b, sizeof b));
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, (int)(r - 1), od, &y);
  if (st) return st;
  float *out = sm_tensor_data(y);
  int64_t longest = 0;
  for (int64_t i = 0; i < nh;) {
    int64_t e = group_end(HI, nh, i, r);
    if (e - i > longest) longest = e - i;
    i = e;
  }
  int64_t *row = sm__kctx_scratch(ctx, (size_t)(longest + 1) * sizeof *row, &st);
  if (!row) return st;
  int64_t h = 0, t = 0;
  while (h < nh || t < nt) {
    /* truth's group against hypothesis's: < 0 only in truth, > 0 only in hypothesis */
    int c = h >= nh ? -1 : t >= nt ? 1 : prefix_cmp(TI, t, HI, h, r);
    const int64_t *at = c > 0 ? HI + h * r : TI + t * r;
    int64_t loc = 0;
    for (int64_t d = 0; d + 1 < r; d++) {
      if (at[d] < 0 || at[d] >= od[d])
        return sm_status_new(SM_INVALID_ARGUMENT, "EditDistance: index %" PRId64 " out of bounds for the output's dimension %" PRId64 " of size %" PRId64,
                             at[d], d, od[d]);
      loc = loc * od[d] + at[d];
    }
    if (c == 0) {
      int64_t he = group_end(HI, nh, h, r), te = group_end(TI, nt, t, r);
      float v = (float)levenshtein(tv, t, te - t, hv, h, he - h, row);
      out[loc] = normalize ? v / (float)(te - t) : v;
      h = he, t = te;
    } else if (c > 0) { /* truth's group is later: zero-length truth here */
      int64_t he = group_end(HI, nh, h, r);
      float v = (float)(he - h);
      out[loc] = normalize && v != 0 ? INFINITY : v;
      h = he;
    } else { /* zero-length hypothesis */
      int64_t te = group_end(TI, nt, t, r);
      out[loc] = normalize ? 1.0f : (float)(te - t);
      t = te;
    }
  }
  return NULL;
}

const sm_kernel sm_kernels_edit_distance[] = {
    {"EditDistance", ed_prepare, ed_compute, free, 0},
    {0},
};
