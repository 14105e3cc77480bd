/* math_misc.c - the small forward ops of tf.raw_ops that the public API or TF1 graphs produce and no
 * other family owns: LinSpace (tf.linspace: float / double, int32 / int64 num), ApproximateEqual
 * (|x - y| <= tolerance, as TF's functor), CheckNumericsV2 (tf.debugging.check_numerics' V2: tells -Inf, +Inf and NaN apart),
 * NthElement (tf.nn's nth_element, reverse), SparseMatMul (float / bfloat16 operands, float
 * product; the sparsity hints change nothing but speed), Timestamp (tf.timestamp: the wall clock
 * as float64 seconds), Fact, ToBool (TF's truthiness of a tensor: a scalar's value, else
 * non-empty) and DeepCopy. Arithmetic in the precision TF's kernels use; TF's messages for bad
 * input. Checked against TensorFlow by tests/unit/test_ops_e6.c (tools/gen_e6_cases.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

/* ---- LinSpace -------------------------------------------------------------------------------- */

static sm_status *linspace_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1), *nt = sm__kctx_input(ctx, 2);
  char s[64];
  static const char *names[3] = {"start", "stop", "num"};
  const sm_tensor *in[3] = {a, b, nt};
  for (int i = 0; i < 3; i++)
    if (sm_tensor_rank(in[i]) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar, not shape %s", names[i], sm__array_shape_str(in[i], s, sizeof s));
  int dt = sm_tensor_dtype(a);
  if ((dt != SM_FLOAT && dt != SM_DOUBLE) || sm_tensor_dtype(b) != dt) return sm__math_bad_dtype("LinSpace", dt);
  if (sm_tensor_dtype(nt) != SM_INT32 && sm_tensor_dtype(nt) != SM_INT64) return sm__math_bad_dtype("LinSpace", sm_tensor_dtype(nt));
  int64_t n = sm__array_int_at(nt, 0);
  if (n <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Requires num > 0: %lld", (long long)n);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, 1, &n, &y);
  if (st) return st;
  if (dt == SM_FLOAT) {
    float x0 = *(const float *)sm_tensor_data(a), x1 = *(const float *)sm_tensor_data(b), *o = sm_tensor_data(y);
    float step = n > 1 ? (x1 - x0) / (float)(n - 1) : 0;
    for (int64_t i = 0; i < n - 1; i++) o[i] = x0 + step * (float)i;
    o[n - 1] = n > 1 ? x1 : x0;
  } else {
    double x0 = *(const double *)sm_tensor_data(a), x1 = *(const double *)sm_tensor_data(b), *o = sm_tensor_data(y);
    double step = n > 1 ? (x1 - x0) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n - 1; i++) o[i] = x0 + step * (double)i;
    o[n - 1] = n > 1 ? x1 : x0;
  }
  return NULL;
}

/* ---- ApproximateEqual ------------------------------------------------------------------------ */

static sm_status *approx_prepare(const sm_node *node, void **state) {
  float tol = 1e-5f;
  sm_status *st = sm__node_attr(node, "tolerance") ? sm__node_attr_float(node, "tolerance", &tol) : NULL;
  if (st) return st;
  float *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = tol;
  *state = p;
  return NULL;
}

static sm_status *approx_compute(const void *state, sm_kctx *ctx) {
  float tol = *(const float *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  char a[128], b[128];
  int r = sm_tensor_rank(x), same = r == sm_tensor_rank(y);
  for (int i = 0; same && i < r; i++) same = sm_tensor_dims(x)[i] == sm_tensor_dims(y)[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "x and y must be of the same shape. x shape: %s. y shape: %s",
                         sm__array_shape_str(x, a, sizeof a), sm__array_shape_str(y, b, sizeof b));
  int dt = sm_tensor_dtype(x);
  if ((dt != SM_FLOAT && dt != SM_DOUBLE) || sm_tensor_dtype(y) != dt) return sm__math_bad_dtype("ApproximateEqual", dt);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_BOOL, r, sm_tensor_dims(x), &z);
  if (st) return st;
  uint8_t *o = sm_tensor_data(z);
  int64_t n = sm_tensor_num_elements(x);
  if (dt == SM_FLOAT) {
    const float *p = sm_tensor_data(x), *q = sm_tensor_data(y);
    for (int64_t i = 0; i < n; i++) o[i] = fabsf(p[i] - q[i]) <= tol;
  } else {
    const double *p = sm_tensor_data(x), *q = sm_tensor_data(y);
    for (int64_t i = 0; i < n; i++) o[i] = fabs(p[i] - q[i]) <= (double)tol;
  }
  return NULL;
}

/* ---- CheckNumericsV2 ------------------------------------------------------------------------- */

static sm_status *check2_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && !sm__math_is_f16(dt)) return sm__math_bad_dtype("CheckNumericsV2", dt);
  int neg = 0, pos = 0, nan = 0;
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    double v = sm__math_get_f64(x, i);
    nan |= isnan(v);
    neg |= v == -INFINITY;
    pos |= v == INFINITY;
  }
  if (!neg && !pos && !nan) {
    sm__kctx_forward(ctx, 0, 0);
    return NULL;
  }
  const char *w[3];
  int k = 0;
  if (neg) w[k++] = "-Inf";
  if (pos) w[k++] = "+Inf";
  if (nan) w[k++] = "NaN";
  char what[64];
  if (k == 1) snprintf(what, sizeof what, "%s", w[0]);
  else if (k == 2) snprintf(what, sizeof what, "%s and %s", w[0], w[1]);
  else snprintf(what, sizeof what, "%s, %s, and %s", w[0], w[1], w[2]);
  return sm_status_new(SM_INVALID_ARGUMENT, "%s : Tensor had %s values", (const char *)state, what);
}

/* ---- NthElement ------------------------------------------------------------------------------ */

/* A key whose unsigned order is the value's order (floats through double; NaN sorts above +Inf). */
static uint64_t order_key(const sm_tensor *t, int64_t i) {
  switch (sm_tensor_dtype(t)) {
  case SM_INT64: return (uint64_t)((const int64_t *)sm_tensor_data(t))[i] ^ (1ull << 63);
  case SM_UINT64: return ((const uint64_t *)sm_tensor_data(t))[i];
  default: {
    double d = sm__math_get_f64(t, i);
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u ^ (1ull << 63);
  }
  }
}

/* The k-th smallest of key[0..n) (its index), by quickselect with the middle element as pivot. */
static int64_t select_kth(uint64_t *key, int64_t *idx, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    uint64_t p = key[lo + (hi - lo) / 2];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (key[i] < p) i++;
      while (key[j] > p) j--;
      if (i <= j) {
        uint64_t t = key[i];
        key[i] = key[j], key[j] = t;
        int64_t u = idx[i];
        idx[i] = idx[j], idx[j] = u;
        i++, j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return idx[k];
}

static sm_status *nth_prepare(const sm_node *node, void **state) {
  int rev = 0;
  sm_status *st = sm__node_attr(node, "reverse") ? sm__node_attr_bool(node, "reverse", &rev) : NULL;
  *state = (void *)(intptr_t)rev;
  return st;
}

static sm_status *nth_compute(const void *state, sm_kctx *ctx) {
  int rev = (int)(intptr_t)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *nt = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(nt) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "N must be scalar but has rank %d", sm_tensor_rank(nt));
  int64_t n = sm__array_int_at(nt, 0);
  if (n < 0) return sm_status_new(SM_INVALID_ARGUMENT, "n must be non-negative but is %lld", (long long)n);
  int r = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Input must be at least rank 1 but is rank %d", r);
  int64_t last = sm_tensor_dims(x)[r - 1];
  if (last <= n) return sm_status_new(SM_INVALID_ARGUMENT, "Input must have last dimension > n = %lld", (long long)n);
  if (!sm__array_esize(dt) || dt == SM_BOOL || dt == SM_STRING || dt == SM_COMPLEX64 || dt == SM_COMPLEX128)
    return sm__math_bad_dtype("NthElement", dt);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r - 1, sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t rows = sm_tensor_num_elements(y);
  if (!rows) return NULL;
  uint64_t *key = sm__kctx_scratch(ctx, (size_t)last * (sizeof *key + sizeof(int64_t)), &st);
  if (!key) return st;
  int64_t *idx = (int64_t *)(key + last), k = rev ? last - 1 - n : n;
  size_t es = sm__array_esize(dt);
  for (int64_t row = 0; row < rows; row++) {
    for (int64_t j = 0; j < last; j++) key[j] = order_key(x, row * last + j), idx[j] = j;
    int64_t at = select_kth(key, idx, last, k);
    memcpy((char *)sm_tensor_data(y) + row * es, (const char *)sm_tensor_data(x) + (row * last + at) * es, es);
  }
  return NULL;
}

/* ---- SparseMatMul ---------------------------------------------------------------------------- */

typedef struct smm_state {
  int ta, tb;
} smm_state;

static sm_status *smm_prepare(const sm_node *node, void **state) {
  smm_state s = {0, 0};
  sm_status *st = sm__node_attr(node, "transpose_a") ? sm__node_attr_bool(node, "transpose_a", &s.ta) : NULL;
  if (!st && sm__node_attr(node, "transpose_b")) st = sm__node_attr_bool(node, "transpose_b", &s.tb);
  if (st) return st;
  smm_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

static sm_status *smm_compute(const void *state, sm_kctx *ctx) {
  const smm_state *s = state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(a) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "a is not a matrix");
  if (sm_tensor_rank(b) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "b is not a matrix");
  for (int i = 0; i < 2; i++) {
    int dt = sm_tensor_dtype(i ? b : a);
    if (dt != SM_FLOAT && dt != SM_BFLOAT16) return sm__math_bad_dtype("SparseMatMul", dt);
  }
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  int64_t m = ad[s->ta ? 1 : 0], k = ad[s->ta ? 0 : 1], k2 = bd[s->tb ? 1 : 0], n = bd[s->tb ? 0 : 1];
  if (k != k2) {
    char x[64], y[64];
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size incompatible: a: %s, b: %s", sm__array_shape_str(a, x, sizeof x),
                         sm__array_shape_str(b, y, sizeof y));
  }
  sm_tensor *c;
  int64_t od[2] = {m, n};
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 2, od, &c);
  if (st || !m || !n || !k) return st;
  float *fa = sm__kctx_scratch(ctx, (size_t)(m * k + k * n) * sizeof(float), &st);
  if (!fa) return st;
  float *fb = fa + m * k, *o = sm_tensor_data(c);
  for (int64_t i = 0; i < m * k; i++) fa[i] = (float)sm__math_get_f64(a, i);
  for (int64_t i = 0; i < k * n; i++) fb[i] = (float)sm__math_get_f64(b, i);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0;
      for (int64_t q = 0; q < k; q++)
        acc += fa[s->ta ? q * m + i : i * k + q] * fb[s->tb ? j * k + q : q * n + j];
      o[i * n + j] = acc;
    }
  return NULL;
}

/* ---- Timestamp, Fact, ToBool, DeepCopy ------------------------------------------------------- */

static sm_status *timestamp_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_DOUBLE, 0, NULL, &y);
  if (!st) *(double *)sm_tensor_data(y) = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return st;
}

static sm_status *fact_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const char fact[] = "The TensorFlow SavedModel format outlives the library that wrote it.";
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &y);
  return st ? st : sm_tensor_set_string(y, 0, fact, sizeof fact - 1);
}

static sm_status *to_bool_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), v;
  if (sm_tensor_rank(x) != 0) {
    v = sm_tensor_num_elements(x) > 0;
  } else if (dt == SM_STRING) {
    size_t len = 0;
    sm_tensor_string(x, 0, &len);
    v = len > 0;
  } else if (dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_INT8 || dt == SM_UINT8 || dt == SM_INT16 || dt == SM_INT32 ||
             dt == SM_INT64) {
    v = sm__math_get_f64(x, 0) != 0;
  } else if (dt == SM_BOOL) {
    v = *(const uint8_t *)sm_tensor_data(x) != 0;
  } else {
    return sm_status_new(SM_INVALID_ARGUMENT, "%s cannot be converted to a boolean", sm__array_dtype_str(dt));
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 0, NULL, &y);
  if (!st) *(uint8_t *)sm_tensor_data(y) = (uint8_t)v;
  return st;
}

static sm_status *deep_copy_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), sm_tensor_rank(x), sm_tensor_dims(x), &y);
  return st ? st : sm__array_copy(y, 0, x, 0, sm_tensor_num_elements(x));
}

const sm_kernel sm_kernels_math_misc[] = {
    {"LinSpace", NULL, linspace_compute, NULL, 0},
    {"ApproximateEqual", approx_prepare, approx_compute, free, 0},
    {"CheckNumericsV2", sm__array_prepare_check_numerics, check2_compute, free, 0},
    {"NthElement", nth_prepare, nth_compute, NULL, 0},
    {"SparseMatMul", smm_prepare, smm_compute, free, 0},
    {"Timestamp", NULL, timestamp_compute, NULL, 0},
    {"Fact", NULL, fact_compute, NULL, 0},
    {"ToBool", NULL, to_bool_compute, NULL, 0},
    {"DeepCopy", NULL, deep_copy_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
