/* math_bitwise.c - the bitwise kernel family over every integer dtype: BitwiseAnd, BitwiseOr,
 * BitwiseXor, LeftShift, RightShift (NumPy broadcasting, math.c's driver), Invert and
 * PopulationCount (uint8 output).
 *
 * As TensorFlow (cwise_ops.h left_shift_op / right_shift_op): a shift count is clamped to
 * [0, bits - 1], a left shift is done unsigned (wrapping), a right shift of a signed value is
 * arithmetic. Keras exports these: RandomPosterization and RandAugment shift, RandomElasticTransform
 * ORs masks. Checked against TensorFlow by tests/unit/test_ops_linalg.c (tools/gen_linalg_cases.py). */
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h"

enum { BW_AND, BW_OR, BW_XOR, BW_SHL, BW_SHR, BW_INVERT, BW_POPCOUNT, BW_NOPS };
static const char *const bw_names[BW_NOPS] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift",
                                              "RightShift", "Invert", "PopulationCount"};

/* The op index travels in the state pointer itself (index + 1): nothing to allocate or release. */
static sm_status *bw_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  for (int k = 0; k < BW_NOPS; k++)
    if (!strcmp(op, bw_names[k])) {
      *state = (void *)(intptr_t)(k + 1);
      return NULL;
    }
  return sm_status_new(SM_INTERNAL, "math_bitwise: no op '%s'", op);
}

/* Width in bytes and signedness of an integer dtype; 0 for any other dtype. */
static int int_width(int dt, int *is_signed) {
  switch (dt) {
    case SM_INT8: *is_signed = 1; return 1;
    case SM_INT16: *is_signed = 1; return 2;
    case SM_INT32: *is_signed = 1; return 4;
    case SM_INT64: *is_signed = 1; return 8;
    case SM_UINT8: *is_signed = 0; return 1;
    case SM_UINT16: *is_signed = 0; return 2;
    case SM_UINT32: *is_signed = 0; return 4;
    case SM_UINT64: *is_signed = 0; return 8;
    default: return 0;
  }
}

/* Element i of an integer buffer, sign- or zero-extended to 64 bits. */
static inline uint64_t load(const void *p, int64_t i, int w, int sgn) {
  switch (w) {
    case 1: return sgn ? (uint64_t)(int64_t)((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
    case 2: return sgn ? (uint64_t)(int64_t)((const int16_t *)p)[i] : ((const uint16_t *)p)[i];
    case 4: return sgn ? (uint64_t)(int64_t)((const int32_t *)p)[i] : ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

static inline void store(void *p, int64_t i, int w, uint64_t v) {
  switch (w) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
  }
}

/* One element of a binary op; a and b extended as load() does. */
static inline uint64_t bw_apply(int op, uint64_t a, uint64_t b, int bits, int sgn) {
  switch (op) {
    case BW_AND: return a & b;
    case BW_OR: return a | b;
    case BW_XOR: return a ^ b;
    default: break;
  }
  /* the count as TF clamps it: below 0 -> 0, past the width -> bits - 1 */
  int neg = sgn && (int64_t)b < 0;
  unsigned s = neg ? 0u : (b > (uint64_t)(bits - 1) ? (unsigned)(bits - 1) : (unsigned)b);
  if (op == BW_SHL) return a << s;
  if (sgn && (int64_t)a < 0) return ~(~a >> s); /* arithmetic, without relying on >> of negatives */
  return a >> s;
}

static sm_status *bw_binary(int op, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x), sgn = 0, w = int_width(dt, &sgn);
  if (!w) return sm__math_bad_dtype(bw_names[op], dt);
  if (sm_tensor_dtype(y) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: x is %s but y is %s", bw_names[op], sm_dtype_name(dt),
                         sm_dtype_name(sm_tensor_dtype(y)));
  sm_bcast b;
  const int ranks[2] = {sm_tensor_rank(x), sm_tensor_rank(y)};
  const int64_t *dims[2] = {sm_tensor_dims(x), sm_tensor_dims(y)};
  if (!sm__math_bcast_init(&b, 2, ranks, dims)) return sm__math_incompatible(x, y);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, b.out_rank, b.out_dims, &z);
  if (st || b.n == 0) return st;
  const void *xp = sm_tensor_data(x), *yp = sm_tensor_data(y);
  void *zp = sm_tensor_data(z);
  int last = b.rank - 1, bits = 8 * w;
  int64_t inner = b.dims[last], s0 = b.strides[0][last], s1 = b.strides[1][last];
  sm_bcast_it it;
  sm__math_bcast_seek(&b, 2, 0, &it);
  for (int64_t r = 0; r < b.n / inner; r++) {
    for (int64_t i = 0; i < inner; i++)
      store(zp, r * inner + i, w,
            bw_apply(op, load(xp, it.off[0] + i * s0, w, sgn), load(yp, it.off[1] + i * s1, w, sgn), bits, sgn));
    sm__math_bcast_next(&b, 2, &it);
  }
  return NULL;
}

static int popcount64(uint64_t v) {
  int c = 0;
  for (; v; v &= v - 1) c++;
  return c;
}

static sm_status *bw_unary(int op, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), sgn = 0, w = int_width(dt, &sgn);
  if (!w) return sm__math_bad_dtype(bw_names[op], dt);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, op == BW_POPCOUNT ? SM_UINT8 : dt, sm_tensor_rank(x),
                                               sm_tensor_dims(x), &z);
  if (st) return st;
  const void *xp = sm_tensor_data(x);
  uint8_t *pc = sm_tensor_data(z);
  uint64_t mask = w == 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * w)) - 1);
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = load(xp, i, w, 0); /* zero-extended: the bits of the element alone */
    if (op == BW_INVERT)
      store(sm_tensor_data(z), i, w, ~v);
    else
      pc[i] = (uint8_t)popcount64(v & mask);
  }
  return NULL;
}

static sm_status *bw_compute(const void *state, sm_kctx *ctx) {
  int op = (int)(intptr_t)state - 1;
  return op >= BW_INVERT ? bw_unary(op, ctx) : bw_binary(op, ctx);
}

#define BW(name) {name, bw_prepare, bw_compute, NULL, 0}
const sm_kernel sm_kernels_math_bitwise[] = {
    BW("BitwiseAnd"), BW("BitwiseOr"), BW("BitwiseXor"), BW("LeftShift"), BW("RightShift"), BW("Invert"),
    BW("PopulationCount"), {0},
};
