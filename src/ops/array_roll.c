/* array_roll.c - the array_roll kernel family: Roll (shifts along several axes at once, shifts to
 * one axis adding up, negative and large shifts taken modulo the dimension) and Bitcast (the bytes
 * reinterpreted: the same shape for the same width, a new last dimension of in/out elements when
 * the output type is narrower, the last dimension dropped when wider), with TensorFlow's
 * messages (roll_op.cc, bitcast_op.cc). Keras exports Roll for keras.ops.roll and Bitcast in
 * keras.ops.argsort/take_along_axis. Checked against TensorFlow by tests/unit/test_ops_linalg.c
 * (tools/gen_linalg_cases.py). */
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h"

/* An int32 or int64 scalar or vector as int64 values; *n its length. */
static sm_status *int_list(const sm_tensor *t, const char *what, const void **data, int64_t *n, int *is64) {
  char s[128];
  if (sm_tensor_rank(t) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar or a 1-D vector. Found: %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), s, sizeof s));
  int dt = sm_tensor_dtype(t);
  if (dt != SM_INT32 && dt != SM_INT64) return sm__math_bad_dtype("Roll", dt);
  *data = sm_tensor_data(t);
  *n = sm_tensor_num_elements(t);
  *is64 = dt == SM_INT64;
  return NULL;
}

static int64_t at(const void *p, int is64, int64_t i) {
  return is64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

static sm_status *roll_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "input must be 1-D or higher");
  const void *sh, *ax;
  int64_t ns, na;
  int s64, a64;
  sm_status *st = int_list(sm__kctx_input(ctx, 1), "shift", &sh, &ns, &s64);
  if (!st) st = int_list(sm__kctx_input(ctx, 2), "axis", &ax, &na, &a64);
  if (st) return st;
  if (ns != na) return sm_status_new(SM_INVALID_ARGUMENT, "shift and axis must have the same size");
  const int64_t *d = sm_tensor_dims(x);
  int64_t off[SM_MAX_RANK] = {0}; /* the net shift of each axis, in [0, dim) */
  for (int64_t i = 0; i < ns; i++) {
    int64_t a = at(ax, a64, i);
    if (a < 0) a += r;
    if (a < 0 || a >= r)
      return sm_status_new(SM_INVALID_ARGUMENT, "axis %lld is out of range", (long long)at(ax, a64, i));
    if (d[a] == 0) continue;
    int64_t m = at(sh, s64, i) % d[a];
    off[a] = ((off[a] + m) % d[a] + d[a]) % d[a];
  }
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, r, d, &z))) return st;
  int64_t n = sm_tensor_num_elements(x);
  if (n == 0) return NULL;
  /* Copy runs of the innermost axis: input index i of it lands at (i + off) % dim. */
  int64_t inner = d[r - 1], rows = n / inner, idx[SM_MAX_RANK] = {0};
  size_t es = dt == SM_STRING ? 0 : sm_dtype_size(dt);
  const char *src = sm_tensor_data(x);
  char *dst = sm_tensor_data(z);
  for (int64_t row = 0; row < rows; row++) {
    int64_t base = 0; /* the output row this input row goes to */
    for (int a = 0; a < r - 1; a++) base = base * d[a] + (idx[a] + off[a]) % d[a];
    int64_t k = off[r - 1], first = inner - k; /* input [0, first) -> output [k, inner); the rest wraps */
    if (es) {
      memcpy(dst + (size_t)(base * inner + k) * es, src + (size_t)(row * inner) * es, (size_t)first * es);
      if (k) memcpy(dst + (size_t)(base * inner) * es, src + (size_t)(row * inner + first) * es, (size_t)k * es);
    } else {
      for (int64_t i = 0; i < inner; i++) {
        size_t len;
        const char *b = sm_tensor_string(x, row * inner + i, &len);
        if ((st = sm_tensor_set_string(z, base * inner + (i + k) % inner, b, len))) return st;
      }
    }
    for (int a = r - 2; a >= 0 && ++idx[a] == d[a]; a--) idx[a] = 0;
  }
  return NULL;
}

/* Bitcast: prepare reads the output type; compute copies the bytes under the new shape. */
static sm_status *bitcast_prepare(const sm_node *node, void **state) {
  int t;
  sm_status *st = sm__node_attr_type(node, "type", &t);
  if (st) return st;
  if (!sm_dtype_size(t) || t == SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bitcast: type %s has no fixed size",
                         sm_dtype_name(t) ? sm_dtype_name(t) : "?");
  *state = (void *)(intptr_t)t;
  return NULL;
}

static sm_status *bitcast_compute(const void *state, sm_kctx *ctx) {
  int out_t = (int)(intptr_t)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int in_t = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  size_t in_sz = in_t == SM_STRING ? 0 : sm_dtype_size(in_t), out_sz = sm_dtype_size(out_t);
  char s[256];
  if (!in_sz) return sm__math_bad_dtype("Bitcast", in_t);
  int64_t dims[SM_MAX_RANK + 1];
  memcpy(dims, sm_tensor_dims(x), (size_t)r * sizeof *dims);
  int orank = r;
  if (in_sz > out_sz) {
    if (in_sz % out_sz || r >= SM_MAX_RANK)
      return sm_status_new(SM_INVALID_ARGUMENT, "Cannot bitcast from %d to %d: shape %s", in_t, out_t,
                           sm_shape_str(r, sm_tensor_dims(x), s, sizeof s));
    dims[orank++] = (int64_t)(in_sz / out_sz);
  } else if (in_sz < out_sz) {
    if (out_sz % in_sz || r == 0 || dims[r - 1] != (int64_t)(out_sz / in_sz))
      return sm_status_new(SM_INVALID_ARGUMENT, "Cannot bitcast from %d to %d: shape %s", in_t, out_t,
                           sm_shape_str(r, sm_tensor_dims(x), s, sizeof s));
    orank--;
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, out_t, orank, dims, &z);
  if (st) return st;
  if (sm_tensor_nbytes(x)) memcpy(sm_tensor_data(z), sm_tensor_data(x), sm_tensor_nbytes(x));
  return NULL;
}

const sm_kernel sm_kernels_array_roll[] = {
    {"Roll", NULL, roll_compute, NULL, 0},
    {"Bitcast", bitcast_prepare, bitcast_compute, NULL, 0},
    {0},
};
