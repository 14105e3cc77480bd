/* array_extra.c - the array_extra kernel family: array ops tf.function code reaches through TF's
 * public API that tools/sweep_ops.py found missing (session 17): HistogramFixedWidth
 * (tf.histogram_fixed_width), ReverseSequence, DynamicPartition, DynamicStitch /
 * ParallelDynamicStitch, Diag / DiagPart (tf.linalg.tensor_diag[_part]), UnravelIndex,
 * InvertPermutation, GuaranteeConst, Empty, ListDiff (tf.compat.v1.setdiff1d), ConjugateTranspose (tf.transpose(conjugate=True),
 * tf.linalg.adjoint), DepthToSpace / SpaceToDepth (NHWC, as TF's CPU kernels). Every dtype the
 * CPU kernels register (the moves work for any storable dtype, strings included), TF's messages
 * for bad input. Checked against TensorFlow by tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

static const char *shp(const sm_tensor *t, char *b, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, cap);
}

/* ---- HistogramFixedWidth ------------------------------------------------------------------- */
static sm_status *histogram_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *v = sm__kctx_input(ctx, 0), *r = sm__kctx_input(ctx, 1), *nb = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(v);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm__math_bad_dtype("HistogramFixedWidth", dt);
  if (sm_tensor_rank(r) != 1 || sm_tensor_num_elements(r) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "value_range should be a vector of 2 elements");
  if (sm_tensor_rank(nb) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "nbins should be a scalar");
  int64_t nbins = sm__array_int_at(nb, 0);
  if (nbins <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "nbins should be a positive number, but got '%lld'", (long long)nbins);
  double lo, hi;
  if (dt == SM_FLOAT) lo = ((const float *)sm_tensor_data(r))[0], hi = ((const float *)sm_tensor_data(r))[1];
  else if (dt == SM_DOUBLE) lo = ((const double *)sm_tensor_data(r))[0], hi = ((const double *)sm_tensor_data(r))[1];
  else lo = (double)sm__array_int_at(r, 0), hi = (double)sm__array_int_at(r, 1);
  if (!(lo < hi)) {
    char a[64], b[64];
    if (dt == SM_FLOAT || dt == SM_DOUBLE) snprintf(a, sizeof a, "%g", lo), snprintf(b, sizeof b, "%g", hi);
    else snprintf(a, sizeof a, "%lld", (long long)lo), snprintf(b, sizeof b, "%lld", (long long)hi);
    return sm_status_new(SM_INVALID_ARGUMENT, "value_range should satisfy value_range[0] < value_range[1], but got '[%s %s]'",
                         a, b);
  }
  int odt = sm__node_num_outputs(sm__kctx_node(ctx)) > 0 ? sm__node_output_dtype(sm__kctx_node(ctx), 0) : SM_INT32;
  if (odt != SM_INT32 && odt != SM_INT64) return sm__math_bad_dtype("HistogramFixedWidth", odt);
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, odt, 1, &nbins, &out);
  if (st) return st;
  /* TF: ((max(v, lo) - lo) as double / step) clipped to nbins - 1, then truncated */
  double step = (hi - lo) / (double)nbins, top = (double)(nbins - 1);
  int64_t n = sm_tensor_num_elements(v);
  for (int64_t i = 0; i < n; i++) {
    double d;
    if (dt == SM_FLOAT) {
      float x = ((const float *)sm_tensor_data(v))[i], l = (float)lo;
      d = (double)((x > l ? x : l) - l);
    } else if (dt == SM_DOUBLE) {
      double x = ((const double *)sm_tensor_data(v))[i];
      d = (x > lo ? x : lo) - lo;
    } else {
      int64_t x = sm__array_int_at(v, i), l = (int64_t)lo;
      d = (double)((x > l ? x : l) - l);
    }
    double q = d / step;
    if (q > top) q = top;
    int64_t b = (int32_t)q;
    if (b < 0 || b >= nbins) continue; /* NaN */
    if (odt == SM_INT32) ((int32_t *)sm_tensor_data(out))[b]++;
    else ((int64_t *)sm_tensor_data(out))[b]++;
  }
  return NULL;
}

/* ---- ReverseSequence ------------------------------------------------------------------------ */
typedef struct revseq_state {
  int64_t seq_dim, batch_dim;
} revseq_state;

static sm_status *revseq_prepare(const sm_node *node, void **state) {
  revseq_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "seq_dim", &s->seq_dim);
  if (!st && sm__node_attr(node, "batch_dim")) st = sm__node_attr_int(node, "batch_dim", &s->batch_dim);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *revseq_compute(const void *state, sm_kctx *ctx) {
  const revseq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *lens = sm__kctx_input(ctx, 1);
  int r = sm_tensor_rank(x);
  int64_t bd = s->batch_dim, sd = s->seq_dim;
  if (bd < 0) bd += r;
  if (sd < 0) sd += r;
  char a[128];
  if (bd == sd) return sm_status_new(SM_INVALID_ARGUMENT, "batch_dim == seq_dim == %lld", (long long)s->seq_dim);
  if (sd < 0 || sd >= r) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid seq_dim %lld", (long long)s->seq_dim);
  if (bd < 0 || bd >= r) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid batch_dim %lld", (long long)s->batch_dim);
  if (sm_tensor_rank(lens) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "seq_lengths must be 1-dim, not %d", sm_tensor_rank(lens));
  const int64_t *d = sm_tensor_dims(x);
  if (sm_tensor_dims(lens)[0] != d[bd])
    return sm_status_new(SM_INVALID_ARGUMENT, "Length of seq_lengths != input.dims(%lld), (%lld vs. %lld)", (long long)bd,
                         (long long)sm_tensor_dims(lens)[0], (long long)d[bd]);
  for (int64_t b = 0; b < d[bd]; b++) {
    int64_t l = sm__array_int_at(lens, b);
    if (l < 0) return sm_status_new(SM_INVALID_ARGUMENT, "seq_lens(%lld) < 0", (long long)b);
    if (l > d[sd])
      return sm_status_new(SM_INVALID_ARGUMENT, "seq_lens(%lld) > input.dims(%lld), (%lld vs. %lld)", (long long)b,
                           (long long)sd, (long long)l, (long long)d[sd]);
  }
  (void)a;
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), r, d, &z);
  if (st || sm_tensor_num_elements(x) == 0) return st;
  /* runs of the dims after both seq_dim and batch_dim are contiguous */
  int last = (int)(sd > bd ? sd : bd);
  int64_t inner = 1, outer = 1;
  for (int i = last + 1; i < r; i++) inner *= d[i];
  for (int i = 0; i <= last; i++) outer *= d[i];
  int64_t idx[SM_MAX_RANK] = {0}, str[SM_MAX_RANK];
  sm__array_strides(last + 1, d, str);
  for (int64_t o = 0; o < outer; o++) {
    int64_t l = sm__array_int_at(lens, idx[bd]), src = o;
    if (idx[sd] < l) src = o + (l - 1 - 2 * idx[sd]) * str[sd];
    if ((st = sm__array_copy(z, o * inner, x, src * inner, inner))) return st;
    for (int k = last; k >= 0 && ++idx[k] == d[k]; k--) idx[k] = 0;
  }
  return NULL;
}

/* ---- DynamicPartition / DynamicStitch ------------------------------------------------------ */
typedef struct n_state {
  int64_t n;
} n_state;

static sm_status *dynpart_prepare(const sm_node *node, void **state) {
  n_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "num_partitions", &s->n);
  if (!st && s->n < 1) st = sm_status_new(SM_INVALID_ARGUMENT, "num_partitions must be at least 1");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* "[i,j]" of flat index i in shape (TF's SliceDebugString); "" for a scalar. */
static void slice_str(const sm_tensor *t, int64_t flat, char *buf, size_t cap) {
  int r = sm_tensor_rank(t);
  const int64_t *d = sm_tensor_dims(t);
  int64_t idx[SM_MAX_RANK];
  for (int k = r - 1; k >= 0; k--) idx[k] = d[k] ? flat % d[k] : 0, flat = d[k] ? flat / d[k] : 0;
  size_t o = 0;
  buf[0] = 0;
  if (r == 0) return;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int k = 0; k < r && o < cap; k++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", k ? "," : "", (long long)idx[k]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

static sm_status *dynpart_compute(const void *state, sm_kctx *ctx) {
  const n_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *p = sm__kctx_input(ctx, 1);
  int pr = sm_tensor_rank(p), xr = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int prefix = pr <= xr;
  for (int i = 0; prefix && i < pr; i++) prefix = xd[i] == sm_tensor_dims(p)[i];
  char a[256], b[256];
  if (!prefix)
    return sm_status_new(SM_INVALID_ARGUMENT, "data.shape must start with partitions.shape, got data.shape = %s, partitions.shape = %s",
                         shp(x, a, sizeof a), shp(p, b, sizeof b));
  int64_t np = sm_tensor_num_elements(p), inner = 1;
  for (int i = pr; i < xr; i++) inner *= xd[i];
  sm_status *st = NULL;
  int64_t *count = sm__kctx_scratch(ctx, (size_t)s->n * sizeof *count, &st);
  if (!count) return st;
  memset(count, 0, (size_t)s->n * sizeof *count);
  const int32_t *pv = sm_tensor_data(p);
  for (int64_t i = 0; i < np; i++) {
    if (pv[i] < 0 || pv[i] >= s->n) {
      slice_str(p, i, a, sizeof a);
      return sm_status_new(SM_INVALID_ARGUMENT, "partitions%s = %d is not in [0, %lld)", a, pv[i], (long long)s->n);
    }
    count[pv[i]]++;
  }
  for (int64_t k = 0; k < s->n; k++) {
    int64_t od[SM_MAX_RANK];
    od[0] = count[k];
    for (int i = pr; i < xr; i++) od[1 + i - pr] = xd[i];
    sm_tensor *z;
    if ((st = sm__kctx_alloc_output(ctx, (int)k, sm_tensor_dtype(x), 1 + xr - pr, od, &z))) return st;
    int64_t row = 0;
    for (int64_t i = 0; i < np && od[0]; i++)
      if (pv[i] == k && (st = sm__array_copy(z, row++ * inner, x, i * inner, inner))) return st;
  }
  return NULL;
}

static sm_status *stitch_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int n = sm__kctx_num_inputs(ctx) / 2;
  if (n < 1) return sm_status_new(SM_INVALID_ARGUMENT, "DynamicStitch needs at least one input");
  const sm_tensor *d0 = sm__kctx_input(ctx, n), *i0 = sm__kctx_input(ctx, 0);
  int64_t maxi = -1;
  char a[256], b[256];
  for (int k = 0; k < n; k++) {
    const sm_tensor *ik = sm__kctx_input(ctx, k), *dk = sm__kctx_input(ctx, n + k);
    if (sm_tensor_dtype(dk) != sm_tensor_dtype(d0))
      return sm_status_new(SM_INVALID_ARGUMENT, "data[%d] has a dtype other than data[0]'s", k);
    int ok = sm_tensor_rank(ik) <= sm_tensor_rank(dk);
    for (int i = 0; ok && i < sm_tensor_rank(ik); i++) ok = sm_tensor_dims(ik)[i] == sm_tensor_dims(dk)[i];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT, "data[%d].shape = %s does not start with indices[%d].shape = %s", k,
                           shp(dk, a, sizeof a), k, shp(ik, b, sizeof b));
    /* the slices after the index dims must all match data[0]'s */
    int r0 = sm_tensor_rank(d0) - sm_tensor_rank(i0), rk = sm_tensor_rank(dk) - sm_tensor_rank(ik);
    ok = r0 == rk;
    for (int i = 0; ok && i < r0; i++)
      ok = sm_tensor_dims(d0)[sm_tensor_rank(i0) + i] == sm_tensor_dims(dk)[sm_tensor_rank(ik) + i];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Need data[0].shape[%d:] = data[%d].shape[%d:], got data[0].shape = %s, data[%d].shape = %s, "
                           "indices[0].shape = %s, indices[%d].shape = %s",
                           sm_tensor_rank(i0), k, sm_tensor_rank(ik), shp(d0, a, sizeof a), k, shp(dk, b, sizeof b),
                           "", k, "");
    const int32_t *iv = sm_tensor_data(ik);
    for (int64_t j = 0; j < sm_tensor_num_elements(ik); j++) maxi = iv[j] > maxi ? iv[j] : maxi;
  }
  int r0 = sm_tensor_rank(d0) - sm_tensor_rank(i0);
  int64_t od[SM_MAX_RANK], inner = 1;
  od[0] = maxi + 1;
  for (int i = 0; i < r0; i++) od[1 + i] = sm_tensor_dims(d0)[sm_tensor_rank(i0) + i], inner *= od[1 + i];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(d0), 1 + r0, od, &z);
  if (st) return st;
  for (int k = 0; k < n; k++) {
    const sm_tensor *ik = sm__kctx_input(ctx, k), *dk = sm__kctx_input(ctx, n + k);
    const int32_t *iv = sm_tensor_data(ik);
    for (int64_t j = 0; j < sm_tensor_num_elements(ik); j++) {
      if (iv[j] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] is out of range", (long long)j);
      if ((st = sm__array_copy(z, iv[j] * inner, dk, j * inner, inner))) return st;
    }
  }
  return NULL;
}

/* ---- Diag / DiagPart ------------------------------------------------------------------------ */
static sm_status *diag_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x);
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Input must be at least rank 1, got 0");
  if (2 * r > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Diag: rank %d is too large", r);
  int64_t od[SM_MAX_RANK], n = sm_tensor_num_elements(x);
  for (int i = 0; i < r; i++) od[i] = od[r + i] = sm_tensor_dims(x)[i];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), 2 * r, od, &z);
  for (int64_t i = 0; !st && i < n; i++) st = sm__array_copy(z, i * n + i, x, i, 1);
  return st;
}

static sm_status *diag_part_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x);
  char a[256];
  if (r == 0 || r % 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "The rank of the tensor should be even and positive, got shape %s",
                         shp(x, a, sizeof a));
  const int64_t *d = sm_tensor_dims(x);
  int h = r / 2;
  for (int i = 0; i < h; i++)
    if (d[i] != d[i + h])
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid shape %s: dimensions %d and %d do not match.", shp(x, a, sizeof a), i,
                           i + h);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), h, d, &z);
  int64_t n = sm_tensor_num_elements(z);
  for (int64_t i = 0; !st && i < n; i++) st = sm__array_copy(z, i, x, i * n + i, 1);
  return st;
}

/* ---- UnravelIndex / InvertPermutation ------------------------------------------------------ */
static sm_status *unravel_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *dm = sm__kctx_input(ctx, 1);
  char a[128];
  if (sm_tensor_rank(ix) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "The indices can only be scalar or vector, got \"%s\"", shp(ix, a, sizeof a));
  if (sm_tensor_rank(dm) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "The indices can only be 1-D, got \"%s\"", shp(dm, a, sizeof a));
  int64_t nd = sm_tensor_num_elements(dm), ni = sm_tensor_num_elements(ix), prod = 1;
  for (int64_t k = 0; k < nd; k++) {
    int64_t v = sm__array_int_at(dm, k);
    if (v <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Input dims must be > 0, got %lld", (long long)v);
    prod *= v;
  }
  for (int64_t i = 0; i < ni; i++) {
    int64_t v = sm__array_int_at(ix, i);
    if (v < 0 || v >= prod)
      return sm_status_new(SM_INVALID_ARGUMENT, "index out of bounds, got %lld. but dims product is %lld", (long long)v,
                           (long long)prod);
  }
  int64_t od[2] = {nd, ni};
  sm_tensor *z;
  int dt = sm_tensor_dtype(ix);
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(ix) == 0 ? 1 : 2, od, &z);
  if (st) return st;
  for (int64_t i = 0; i < ni; i++) {
    int64_t v = sm__array_int_at(ix, i);
    for (int64_t k = nd - 1; k >= 0; k--) {
      int64_t dk = sm__array_int_at(dm, k), q = v % dk;
      v /= dk;
      if (dt == SM_INT32) ((int32_t *)sm_tensor_data(z))[k * ni + i] = (int32_t)q;
      else ((int64_t *)sm_tensor_data(z))[k * ni + i] = q;
    }
  }
  return NULL;
}

static sm_status *invperm_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_INT32 && dt != SM_INT64) return sm__math_bad_dtype("InvertPermutation", dt);
  if (sm_tensor_rank(x) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "invert_permutation expects a 1D vector.");
  int64_t n = sm_tensor_num_elements(x);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &z);
  if (st) return st;
  uint8_t *seen = sm__kctx_scratch(ctx, (size_t)n + 1, &st);
  if (!seen) return st;
  memset(seen, 0, (size_t)n + 1);
  for (int64_t i = 0; i < n; i++) {
    int64_t d = sm__array_int_at(x, i);
    if (d < 0 || d >= n) return sm_status_new(SM_INVALID_ARGUMENT, "%lld is not between 0 and %lld", (long long)d, (long long)n);
    if (seen[d]) return sm_status_new(SM_INVALID_ARGUMENT, "%lld is duplicated in the input.", (long long)d);
    seen[d] = 1;
    if (dt == SM_INT32) ((int32_t *)sm_tensor_data(z))[d] = (int32_t)i;
    else ((int64_t *)sm_tensor_data(z))[d] = i;
  }
  return NULL;
}

/* ListDiff (tf.compat.v1.setdiff1d): the elements of x not in y, in order, and their positions. */
static sm_status *listdiff_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  char a[128];
  if (sm_tensor_rank(x) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "x should be a 1D vector.");
  if (sm_tensor_rank(y) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "y should be a 1D vector.");
  (void)a;
  int dt = sm_tensor_dtype(x);
  if (dt != sm_tensor_dtype(y)) return sm__math_bad_dtype("ListDiff", sm_tensor_dtype(y));
  size_t es = sm__array_esize(dt);
  int64_t nx = sm_tensor_num_elements(x), ny = sm_tensor_num_elements(y), cnt = 0;
  sm_status *st = NULL;
  uint8_t *keep = sm__kctx_scratch(ctx, (size_t)nx + 1, &st);
  if (!keep) return st;
  for (int64_t i = 0; i < nx; i++) {
    int found = 0;
    for (int64_t j = 0; j < ny && !found; j++) {
      if (dt == SM_STRING) {
        size_t l1, l2;
        const char *p1 = sm_tensor_string(x, i, &l1), *p2 = sm_tensor_string(y, j, &l2);
        found = l1 == l2 && (!l1 || !memcmp(p1, p2, l1));
      } else {
        found = !memcmp((const char *)sm_tensor_data(x) + (size_t)i * es, (const char *)sm_tensor_data(y) + (size_t)j * es, es);
      }
    }
    keep[i] = !found;
    cnt += !found;
  }
  int idt = sm__node_num_outputs(sm__kctx_node(ctx)) > 1 ? sm__node_output_dtype(sm__kctx_node(ctx), 1) : SM_INT32;
  sm_tensor *out, *idx;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 1, &cnt, &out))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 1, idt == SM_INT64 ? SM_INT64 : SM_INT32, 1, &cnt, &idx))) return st;
  for (int64_t i = 0, k = 0; i < nx; i++) {
    if (!keep[i]) continue;
    if ((st = sm__array_copy(out, k, x, i, 1))) return st;
    if (idt == SM_INT64) ((int64_t *)sm_tensor_data(idx))[k] = i;
    else ((int32_t *)sm_tensor_data(idx))[k] = (int32_t)i;
    k++;
  }
  return NULL;
}

/* Empty (tf.nn.ctc_loss's dense path, tf.raw_ops.Empty): a tensor of the given shape; its elements
 * are zero here whether or not `init` asks (TF leaves them unset without it). */
static sm_status *empty_prepare(const sm_node *node, void **state) {
  int dt = 0;
  sm_status *st = sm__node_attr_type(node, "dtype", &dt);
  if (st) return st;
  *state = (void *)(intptr_t)(dt + 1);
  return NULL;
}

static sm_status *empty_compute(const void *state, sm_kctx *ctx) {
  int dt = (int)(intptr_t)state - 1;
  const sm_tensor *sh = sm__kctx_input(ctx, 0);
  char a[128];
  if (sm_tensor_rank(sh) != 1 || sm_tensor_dtype(sh) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "shape must be a vector of int32, got shape %s", shp(sh, a, sizeof a));
  int64_t n = sm_tensor_num_elements(sh), d[SM_MAX_RANK];
  if (n > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Empty: rank %lld is too large", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    d[i] = ((const int32_t *)sm_tensor_data(sh))[i];
    if (d[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)d[i]);
  }
  sm_tensor *z;
  return sm__kctx_alloc_output(ctx, 0, dt, (int)n, d, &z);
}

static sm_status *forward_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* ---- ConjugateTranspose ---------------------------------------------------------------------- */
static sm_status *conj_transpose_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *pt = sm__kctx_input(ctx, 1);
  int R = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  char a[128];
  if (sm_tensor_rank(pt) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "perm must be a vector, not %s", shp(pt, a, sizeof a));
  if (sm_tensor_num_elements(pt) != R)
    return sm_status_new(SM_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a vector of size %lld", R,
                         (long long)sm_tensor_num_elements(pt));
  int64_t perm[SM_MAX_RANK], n;
  sm_status *st = sm__array_read_ints(pt, "perm", perm, SM_MAX_RANK, &n);
  if (st) return st;
  int seen[SM_MAX_RANK] = {0};
  for (int i = 0; i < R; i++) {
    if (perm[i] < 0 || perm[i] >= R)
      return sm_status_new(SM_INVALID_ARGUMENT, "%lld is out of range [0 .. %d)", (long long)perm[i], R);
    seen[perm[i]] = 1;
  }
  for (int i = 0; i < R; i++)
    if (!seen[i]) return sm_status_new(SM_INVALID_ARGUMENT, "%d is missing from the permutation.", i);
  const int64_t *d = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], istr[SM_MAX_RANK], ostr[SM_MAX_RANK], sstr[SM_MAX_RANK];
  for (int i = 0; i < R; i++) od[i] = d[perm[i]];
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, R, od, &z)) || sm_tensor_num_elements(z) == 0) return st;
  sm__array_strides(R, d, istr);
  sm__array_strides(R, od, ostr);
  for (int i = 0; i < R; i++) sstr[i] = istr[perm[i]];
  if ((st = sm__array_strided_copy(z, 0, ostr, x, 0, sstr, R, od))) return st;
  int64_t m = sm_tensor_num_elements(z);
  if (dt == SM_COMPLEX64)
    for (int64_t i = 0; i < m; i++) ((float *)sm_tensor_data(z))[2 * i + 1] *= -1;
  else if (dt == SM_COMPLEX128)
    for (int64_t i = 0; i < m; i++) ((double *)sm_tensor_data(z))[2 * i + 1] *= -1;
  return NULL;
}

/* ---- DepthToSpace / SpaceToDepth --------------------------------------------------------------- */
typedef struct d2s_state {
  int64_t bs;
  int to_space;
} d2s_state;

static sm_status *d2s_prepare(const sm_node *node, void **state) {
  d2s_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->to_space = !strcmp(sm__node_op(node), "DepthToSpace");
  sm_status *st = sm__node_attr_int(node, "block_size", &s->bs);
  if (!st && s->bs <= 1) st = sm_status_new(SM_INVALID_ARGUMENT, "Block size should be > 1, but was: %lld", (long long)s->bs);
  if (!st && sm__node_attr(node, "data_format")) {
    const char *f;
    size_t len;
    st = sm__node_attr_string(node, "data_format", &f, &len);
    if (!st && !(len == 4 && !memcmp(f, "NHWC", 4)))
      st = sm_status_new(SM_INVALID_ARGUMENT, "Only NHWC data_format supported on CPU. Got %.*s", (int)len, f);
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *d2s_compute(const void *state, sm_kctx *ctx) {
  const d2s_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input rank should be: 4 instead of: %d", sm_tensor_rank(x));
  const int64_t *d = sm_tensor_dims(x);
  int64_t bs = s->bs, B = d[0], H = d[1], W = d[2], C = d[3], od[4];
  if (s->to_space) {
    if (C % (bs * bs))
      return sm_status_new(SM_INVALID_ARGUMENT, "Input depth dimension %lld should be divisible by: %lld", (long long)C,
                           (long long)(bs * bs));
    od[0] = B, od[1] = H * bs, od[2] = W * bs, od[3] = C / (bs * bs);
  } else {
    if (H % bs || W % bs)
      return sm_status_new(SM_INVALID_ARGUMENT, "Image width %lld and height %lld should be divisible by block_size: %lld",
                           (long long)W, (long long)H, (long long)bs);
    od[0] = B, od[1] = H / bs, od[2] = W / bs, od[3] = C * bs * bs;
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), 4, od, &z);
  if (st || sm_tensor_num_elements(z) == 0) return st;
  /* the space side [B, h*bs+i, w*bs+j, c] is the depth side [B, h, w, (i*bs+j)*c_small + c] */
  const int64_t *sp = s->to_space ? od : d, *dp = s->to_space ? d : od; /* space-shaped, depth-shaped */
  int64_t cs = sp[3];
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < dp[1]; h++)
      for (int64_t w = 0; w < dp[2]; w++)
        for (int64_t i = 0; i < bs; i++)
          for (int64_t j = 0; j < bs; j++) {
            int64_t so = ((b * sp[1] + h * bs + i) * sp[2] + w * bs + j) * cs;
            int64_t dof = ((b * dp[1] + h) * dp[2] + w) * dp[3] + (i * bs + j) * cs;
            st = s->to_space ? sm__array_copy(z, so, x, dof, cs) : sm__array_copy(z, dof, x, so, cs);
            if (st) return st;
          }
  return NULL;
}

const sm_kernel sm_kernels_array_extra[] = {
    {"HistogramFixedWidth", NULL, histogram_compute, NULL, 0},
    {"ReverseSequence", revseq_prepare, revseq_compute, free, 0},
    {"DynamicPartition", dynpart_prepare, dynpart_compute, free, 0},
    {"DynamicStitch", NULL, stitch_compute, NULL, 0},
    {"ParallelDynamicStitch", NULL, stitch_compute, NULL, 0},
    {"Diag", NULL, diag_compute, NULL, 0},
    {"DiagPart", NULL, diag_part_compute, NULL, 0},
    {"UnravelIndex", NULL, unravel_compute, NULL, 0},
    {"InvertPermutation", NULL, invperm_compute, NULL, 0},
    {"GuaranteeConst", NULL, forward_compute, NULL, 0},
    {"ListDiff", NULL, listdiff_compute, NULL, 0},
    {"Empty", empty_prepare, empty_compute, NULL, 0},
    {"ConjugateTranspose", NULL, conj_transpose_compute, NULL, 0},
    {"DepthToSpace", d2s_prepare, d2s_compute, free, 0},
    {"SpaceToDepth", d2s_prepare, d2s_compute, free, 0},
    {0},
};
