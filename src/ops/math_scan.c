/* math_scan.c - Cumsum and Cumprod: running sums/products along one axis (exclusive, reverse); float,
 * double, int32, int64, half / bfloat16 with TF's rounding of every partial result, and
 * complex64/complex128 (Cumsum: the (re, im) pairs as reals; Cumprod: scan_c64/c128). */
#include <stdlib.h>

#include "ops/math_int.h"
#include "runtime/kernel.h"

typedef struct scan_state {
  int prod;      /* Cumprod instead of Cumsum */
  int exclusive; /* element i leaves out x[i] */
  int reverse;   /* accumulate from the end */
} scan_state;

sm_status *sm__math_scan_prepare(const sm_node *node, void **state) {
  scan_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_bool(node, "exclusive", &st->exclusive);
  if (!s) s = sm__node_attr_bool(node, "reverse", &st->reverse);
  if (s) {
    free(st);
    return s;
  }
  st->prod = sm__node_op(node)[3] == 'p'; /* "Cumprod" */
  *state = st;
  return NULL;
}

/* One loop per dtype: outer x axis x inner, the axis walked forwards or backwards. */
/* Integers accumulate in their unsigned type: overflow wraps as in TF, never undefined behaviour. */
#define DEF_SCAN(NAME, T, A)                                                                               \
  static void NAME(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, const scan_state *st) { \
    for (int64_t o = 0; o < outer; o++)                                                                 \
      for (int64_t in = 0; in < inner; in++) {                                                          \
        A acc = st->prod ? (A)1 : (A)0;                                                                    \
        for (int64_t k = 0; k < len; k++) {                                                             \
          int64_t j = st->reverse ? len - 1 - k : k;                                                    \
          int64_t at = (o * len + j) * inner + in;                                                      \
          if (st->exclusive) {                                                                          \
            y[at] = (T)acc;                                                                              \
            acc = st->prod ? (A)(acc * (A)x[at]) : (A)(acc + (A)x[at]);                                       \
          } else {                                                                                      \
            acc = st->prod ? (A)(acc * (A)x[at]) : (A)(acc + (A)x[at]);                                       \
            y[at] = (T)acc;                                                                              \
          }                                                                                             \
        }                                                                                               \
      }                                                                                                 \
  }
DEF_SCAN(scan_f32, float, float)
DEF_SCAN(scan_f64, double, double)
DEF_SCAN(scan_i32, int32_t, uint32_t)
DEF_SCAN(scan_i64, int64_t, uint64_t)

/* complex Cumprod: C's complex product (Annex G, as TF's std::complex one) from 1 + 0i */
#define DEF_CSCAN(NAME, T)                                                                              \
  static void NAME(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, const scan_state *st) { \
    for (int64_t o = 0; o < outer; o++)                                                                 \
      for (int64_t in = 0; in < inner; in++) {                                                          \
        T acc = 1;                                                                                      \
        for (int64_t k = 0; k < len; k++) {                                                             \
          int64_t j = st->reverse ? len - 1 - k : k;                                                    \
          int64_t at = (o * len + j) * inner + in;                                                      \
          if (st->exclusive) y[at] = acc;                                                               \
          acc *= x[at];                                                                                 \
          if (!st->exclusive) y[at] = acc;                                                              \
        }                                                                                               \
      }                                                                                                 \
  }
DEF_CSCAN(scan_c64, float _Complex)
DEF_CSCAN(scan_c128, double _Complex)

/* half / bfloat16: TF's Eigen scan accumulates in the 16-bit type, each partial sum or product
 * rounded (computed in float and rounded to nearest even, as Eigen's half arithmetic does). */
static void scan_16(const uint16_t *x, uint16_t *y, int64_t outer, int64_t len, int64_t inner, const scan_state *st,
                    int bf) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      float one = st->prod ? 1.0f : 0.0f;
      uint16_t acc = bf ? sm__f32_to_bf16(one) : sm__f32_to_half(one);
      for (int64_t k = 0; k < len; k++) {
        int64_t j = st->reverse ? len - 1 - k : k;
        int64_t at = (o * len + j) * inner + in;
        if (st->exclusive) y[at] = acc;
        float a = bf ? sm__bf16_to_f32(acc) : sm__half_to_f32(acc), v = bf ? sm__bf16_to_f32(x[at]) : sm__half_to_f32(x[at]);
        float r = st->prod ? a * v : a + v;
        acc = bf ? sm__f32_to_bf16(r) : sm__f32_to_half(r);
        if (!st->exclusive) y[at] = acc;
      }
    }
}

sm_status *sm__math_scan_compute(const void *state, sm_kctx *ctx) {
  const scan_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *axis_t = sm__kctx_input(ctx, 1);
  int rank = sm_tensor_rank(x);
  const int64_t *dims = sm_tensor_dims(x);
  if (sm_tensor_rank(axis_t) != 0 || (sm_tensor_dtype(axis_t) != SM_INT32 && sm_tensor_dtype(axis_t) != SM_INT64))
    return sm_status_new(SM_INVALID_ARGUMENT, "axis must be a scalar int32 or int64");
  int64_t axis = sm_tensor_dtype(axis_t) == SM_INT32 ? *(const int32_t *)sm_tensor_data(axis_t)
                                                      : *(const int64_t *)sm_tensor_data(axis_t);
  if (rank == 0 || axis < -rank || axis >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "axis %lld is out of range for a tensor of rank %d", (long long)axis,
                         rank);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1, len = dims[axis];
  for (int i = 0; i < axis; i++) outer *= dims[i];
  for (int i = (int)axis + 1; i < rank; i++) inner *= dims[i];
  sm_tensor *y;
  int dt = sm_tensor_dtype(x);
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, rank, dims, &y);
  if (s) return s;
  if (sm_tensor_num_elements(x) == 0) return NULL;
  const void *xd = sm_tensor_data(x);
  void *yd = sm_tensor_data(y);
  switch (dt) {
  case SM_FLOAT: scan_f32(xd, yd, outer, len, inner, st); return NULL;
  case SM_DOUBLE: scan_f64(xd, yd, outer, len, inner, st); return NULL;
  case SM_INT32: scan_i32(xd, yd, outer, len, inner, st); return NULL;
  case SM_INT64: scan_i64(xd, yd, outer, len, inner, st); return NULL;
  case SM_COMPLEX64:
    if (st->prod) scan_c64(xd, yd, outer, len, inner, st);
    else scan_f32(xd, yd, outer, len, inner * 2, st);
    return NULL;
  case SM_COMPLEX128:
    if (st->prod) scan_c128(xd, yd, outer, len, inner, st);
    else scan_f64(xd, yd, outer, len, inner * 2, st);
    return NULL;
  case SM_HALF: scan_16(xd, yd, outer, len, inner, st, 0); return NULL;
  case SM_BFLOAT16: scan_16(xd, yd, outer, len, inner, st, 1); return NULL;
  default:
    return sm_status_new(SM_UNIMPLEMENTED, "%s of dtype %s is not supported", st->prod ? "Cumprod" : "Cumsum",
                         sm_dtype_name(dt));
  }
}
