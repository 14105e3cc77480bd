/* scatter_resource.c - the scatter_resource kernel family: scatters into variables and reads
 * gathered from them. ResourceScatterAdd/Sub/Mul/Div/Min/Max/Update and their TF1 ref forms
 * Scatter* (rows of a variable by 1-D or N-D indices); ResourceScatterNdAdd/Sub/Min/Max/Update and
 * the ref forms ScatterNd*, and ScatterNdNonAliasingAdd (a tensor, not a variable); ResourceGatherNd;
 * CountUpTo / ResourceCountUpTo; StridedSliceAssign / ResourceStridedSliceAssign (array_slice.c's
 * strided-slice put on a copy of the value).
 *
 * As state.c's AssignAdd, a variable's value is never written in place (it may be shared): under
 * the variable's lock its value is copied, the updates applied to the copy and the copy assigned.
 * Every index is checked before any write. The N-D forms use scatter.c's ScatterNd core
 * (sm__scatter_nd_into: every real type, half/bfloat16, complex but for min/max, bool add/sub for the
 * resource forms) and ResourceGatherNd GatherNd's (sm__array_gather_nd). TensorFlow's kernels: scatter_op.cc, resource_variable_ops.cc,
 * scatter_nd_op.cc, count_up_to_op.cc. */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

enum { RS_UPDATE, RS_ADD, RS_SUB, RS_MUL, RS_DIV, RS_MIN, RS_MAX };

typedef struct {
  int op;
  int nd; /* the ScatterNd forms */
  int ref;
  char name[40];
} rs_state;

static sm_status *rs_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  rs_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  snprintf(st->name, sizeof st->name, "%s", op);
  st->ref = strncmp(op, "Resource", 8) != 0;
  const char *p = st->ref ? op : op + 8;
  st->nd = !strncmp(p, "ScatterNd", 9);
  p += st->nd ? 9 : 7;
  static const char *const names[] = {"Update", "Add", "Sub", "Mul", "Div", "Min", "Max"};
  st->op = -1;
  for (int i = 0; i < 7; i++)
    if (!strcmp(p, names[i])) st->op = i;
  if (st->op < 0) {
    free(st);
    return sm_status_new(SM_INTERNAL, "%s is not a scatter op", op);
  }
  *state = st;
  return NULL;
}

/* The variable of input 0 (a resource handle, or a ref the executor passes as one). */
static sm_status *input_var(sm_kctx *ctx, const char *op, sm_variable **v) {
  sm_status *s = sm__handle_variable(sm__kctx_input(ctx, 0), 0, v);
  return s ? sm_status_prefix(s, "%s", op) : NULL;
}

/* dst[i] op= src[i or 0], n elements, one dtype. */
#define RS_LOOP(T, EXPR)                                    \
  do {                                                      \
    T *d = (T *)dst;                                        \
    const T *s = (const T *)src;                            \
    for (int64_t i = 0; i < n; i++) {                       \
      T a = d[i], b = s[bcast ? 0 : i];                     \
      (void)a;                                              \
      d[i] = (EXPR);                                        \
    }                                                       \
  } while (0)
#define RS_ARITH(T, U, SIGNED)                                                           \
  switch (op) {                                                                          \
    case RS_ADD: RS_LOOP(T, (T)((U)a + (U)b)); break;                                    \
    case RS_SUB: RS_LOOP(T, (T)((U)a - (U)b)); break;                                    \
    case RS_MUL: RS_LOOP(T, (T)((U)a * (U)b)); break;                                    \
    case RS_DIV: RS_LOOP(T, (T)(SIGNED && b == (T)-1 ? (U)0 - (U)a : (U)(b ? a / b : 0))); break; \
    case RS_MIN: RS_LOOP(T, b < a ? b : a); break;                                       \
    case RS_MAX: RS_LOOP(T, b > a ? b : a); break;                                       \
    default: RS_LOOP(T, b); break;                                                       \
  }
#define RS_FLOAT(T)                                \
  switch (op) {                                    \
    case RS_ADD: RS_LOOP(T, a + b); break;         \
    case RS_SUB: RS_LOOP(T, a - b); break;         \
    case RS_MUL: RS_LOOP(T, a * b); break;         \
    case RS_DIV: RS_LOOP(T, a / b); break;         \
    case RS_MIN: RS_LOOP(T, b < a ? b : a); break; \
    case RS_MAX: RS_LOOP(T, b > a ? b : a); break; \
    default: RS_LOOP(T, b); break;                 \
  }
#define RS_CPLX(T)                         \
  switch (op) {                            \
    case RS_ADD: RS_LOOP(T, a + b); break; \
    case RS_SUB: RS_LOOP(T, a - b); break; \
    case RS_MUL: RS_LOOP(T, a * b); break; \
    case RS_DIV: RS_LOOP(T, a / b); break; \
    default: RS_LOOP(T, b); break;         \
  }

static void combine(int op, int dt, void *dst, const void *src, int64_t n, int bcast) {
  switch (dt) {
    case SM_FLOAT: RS_FLOAT(float); break;
    case SM_DOUBLE: RS_FLOAT(double); break;
    case SM_COMPLEX64: RS_CPLX(float complex); break;
    case SM_COMPLEX128: RS_CPLX(double complex); break;
    case SM_INT8: RS_ARITH(int8_t, uint8_t, 1); break;
    case SM_INT16: RS_ARITH(int16_t, uint16_t, 1); break;
    case SM_INT32: RS_ARITH(int32_t, uint32_t, 1); break;
    case SM_INT64: RS_ARITH(int64_t, uint64_t, 1); break;
    case SM_UINT8: RS_ARITH(uint8_t, uint8_t, 0); break;
    case SM_UINT16: RS_ARITH(uint16_t, uint16_t, 0); break;
    case SM_UINT32: RS_ARITH(uint32_t, uint32_t, 0); break;
    case SM_UINT64: RS_ARITH(uint64_t, uint64_t, 0); break;
    default: { /* half, bfloat16: in float, one element at a time */
      for (int64_t i = 0; i < n; i++) {
        float a, b;
        sm__math_to_f32(dt, (const uint16_t *)dst + i, &a, 1);
        sm__math_to_f32(dt, (const uint16_t *)src + (bcast ? 0 : i), &b, 1);
        float r = op == RS_ADD ? a + b : op == RS_SUB ? a - b : op == RS_MUL ? a * b : op == RS_DIV ? a / b
                  : op == RS_MIN ? (b < a ? b : a) : op == RS_MAX ? (b > a ? b : a) : b;
        sm__math_from_f32(dt, &r, (uint16_t *)dst + i, 1);
      }
    }
  }
}

static int arith_dtype(int dt, int op) {
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: case SM_INT8: case SM_INT16: case SM_INT32:
    case SM_INT64: case SM_UINT8: case SM_UINT16: case SM_UINT32: case SM_UINT64:
      return 1;
    case SM_COMPLEX64: case SM_COMPLEX128:
      return op != RS_MIN && op != RS_MAX;
    default:
      return 0;
  }
}

/* Scatter rows: updates.shape = indices.shape + var.shape[1:], or updates a scalar. */
static sm_status *scatter_rows(const rs_state *st, sm_tensor *nt, const sm_tensor *ind, const sm_tensor *upd) {
  char a[128], b[128], c[128];
  const char *op = st->name;
  int dt = sm_tensor_dtype(nt), vr = sm_tensor_rank(nt), ir = sm_tensor_rank(ind), ur = sm_tensor_rank(upd);
  if (vr < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: params must be at least 1-D, got %s", op, sm__array_shape_str(nt, a, sizeof a));
  int bcast = ur == 0;
  if (!bcast) {
    int ok = ur == ir + vr - 1;
    for (int i = 0; ok && i < ir; i++) ok = sm_tensor_dims(upd)[i] == sm_tensor_dims(ind)[i];
    for (int i = 1; ok && i < vr; i++) ok = sm_tensor_dims(upd)[ir + i - 1] == sm_tensor_dims(nt)[i];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "%s: Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got "
                           "updates.shape %s, indices.shape %s, params.shape %s",
                           op, sm__array_shape_str(upd, a, sizeof a), sm__array_shape_str(ind, b, sizeof b),
                           sm__array_shape_str(nt, c, sizeof c));
  }
  int64_t rows = sm_tensor_dims(nt)[0], inner = rows ? sm_tensor_num_elements(nt) / rows : 0, n = sm_tensor_num_elements(ind);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = sm__array_int_at(ind, i);
    if (k < 0 || k >= rows)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: indices[%lld] = %lld is not in [0, %lld)", op, (long long)i,
                           (long long)k, (long long)rows);
  }
  if (st->op == RS_DIV && sm__array_is_int(dt)) /* TF's integer division by zero is a crash; here an error */
    for (int64_t i = 0; i < (bcast ? 1 : sm_tensor_num_elements(upd)); i++)
      if (sm__array_int_at(upd, i) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: integer division by zero", op);
  size_t es = sm__array_esize(dt);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = sm__array_int_at(ind, i);
    if (st->op == RS_UPDATE && !bcast) {
      sm_status *s = sm__array_copy(nt, k * inner, upd, i * inner, inner);
      if (s) return s;
    } else if (st->op == RS_UPDATE) {
      for (int64_t j = 0; j < inner; j++) {
        sm_status *s = sm__array_copy(nt, k * inner + j, upd, 0, 1);
        if (s) return s;
      }
    } else {
      combine(st->op, dt, (char *)sm_tensor_data(nt) + (size_t)(k * inner) * es,
              (const char *)sm_tensor_data(upd) + (bcast ? 0 : (size_t)(i * inner) * es), inner, bcast);
    }
  }
  return NULL;
}

/* Under v's lock: a copy of its value, apply(copy, arg), the copy assigned (nothing on error). */
static sm_status *update_copy(sm_variable *v, sm_status *(*apply)(sm_tensor *nt, const void *const *arg), const void *const *arg) {
  sm__variable_lock(v);
  sm_tensor *old = NULL, *nt = NULL;
  sm_status *s = sm__variable_read(v, &old);
  if (!s) s = sm_tensor_new(sm__variable_dtype(v), sm_tensor_rank(old), sm_tensor_dims(old), &nt);
  if (!s) s = sm__array_copy(nt, 0, old, 0, sm_tensor_num_elements(old));
  if (!s) s = apply(nt, arg);
  if (!s) {
    s = sm__variable_assign(v, nt);
    nt = NULL;
  }
  sm__variable_unlock(v);
  sm_tensor_free(old);
  sm_tensor_free(nt);
  return s;
}

/* arg: the rs_state, indices, updates. */
static sm_status *rs_apply(sm_tensor *nt, const void *const *arg) {
  const rs_state *st = arg[0];
  if (st->nd) {
    static const int nd_op[] = {SM_SCATTER_UPDATE, SM_SCATTER_ADD, SM_SCATTER_SUB, -1, -1, SM_SCATTER_MIN, SM_SCATTER_MAX};
    return sm__scatter_nd_into(nd_op[st->op], arg[1], arg[2], nt);
  }
  return scatter_rows(st, nt, arg[1], arg[2]);
}

static sm_status *rs_compute(const void *state, sm_kctx *ctx) {
  const rs_state *st = state;
  const char *op = st->name;
  sm_variable *v;
  sm_status *s = input_var(ctx, op, &v);
  if (s) return s;
  const sm_tensor *ind = sm__kctx_input(ctx, 1), *upd = sm__kctx_input(ctx, 2);
  int dt = sm__variable_dtype(v);
  if (!sm__array_is_int(sm_tensor_dtype(ind)))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: indices must be int32 or int64, not %s", op,
                         sm__array_dtype_str(sm_tensor_dtype(ind)));
  if (sm_tensor_dtype(upd) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: updates are %s, the variable %s is %s", op,
                         sm__array_dtype_str(sm_tensor_dtype(upd)), sm__variable_name(v), sm__array_dtype_str(dt));
  /* bool: TF's CPU registers ResourceScatterNdAdd/Sub (an or, an exclusive or; scatter.c), not the ref forms */
  int bool_nd = dt == SM_BOOL && st->nd && !st->ref && (st->op == RS_ADD || st->op == RS_SUB);
  if (st->op != RS_UPDATE && !bool_nd && !arith_dtype(dt, st->op))
    return sm_status_new(SM_UNIMPLEMENTED, "%s has no kernel for T=%s", op, sm__array_dtype_str(dt));
  const void *arg[3] = {st, ind, upd};
  s = update_copy(v, rs_apply, arg);
  if (!s && st->ref) sm__kctx_forward(ctx, 0, 0);
  return s;
}

/* StridedSliceAssign(ref, begin, end, strides, value) / ResourceStridedSliceAssign: the variable's
 * slice (StridedSlice's, every mask) set to value broadcast to its shape (tf.Variable's
 * `v[1:3].assign(x)`), on a copy under the variable's lock. */
/* arg: the strided-slice state, begin, end, strides, value. */
static sm_status *ssa_apply(sm_tensor *nt, const void *const *arg) {
  return sm__array_strided_slice_put(arg[0], nt, arg[1], arg[2], arg[3], arg[4]);
}

static sm_status *ssa_compute(const void *state, sm_kctx *ctx) {
  int ref = strcmp(sm__node_op(sm__kctx_node(ctx)), "ResourceStridedSliceAssign") != 0;
  const char *op = ref ? "StridedSliceAssign" : "ResourceStridedSliceAssign";
  sm_variable *v;
  sm_status *s = input_var(ctx, op, &v);
  if (s) return s;
  const sm_tensor *val = sm__kctx_input(ctx, 4);
  int dt = sm__variable_dtype(v);
  if (sm_tensor_dtype(val) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: value is %s, the variable %s is %s", op,
                         sm__array_dtype_str(sm_tensor_dtype(val)), sm__variable_name(v), sm__array_dtype_str(dt));
  const void *arg[5] = {state, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), val};
  s = update_copy(v, ssa_apply, arg);
  if (!s && ref) sm__kctx_forward(ctx, 0, 0);
  return s;
}

/* ScatterNdNonAliasingAdd(input, indices, updates): input with updates added at indices. */
static sm_status *nonaliasing_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output_uninit(ctx, 0, sm_tensor_dtype(in), sm_tensor_rank(in), sm_tensor_dims(in), &out);
  if (!s) s = sm__array_copy(out, 0, in, 0, sm_tensor_num_elements(in));
  return s ? s : sm__scatter_nd_into(SM_SCATTER_ADD, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), out);
}

static sm_status *gather_nd_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variable *v;
  sm_status *s = input_var(ctx, "ResourceGatherNd", &v);
  sm_tensor *val = NULL;
  if (!s) s = sm__variable_read(v, &val);
  if (!s) s = sm__array_gather_nd(ctx, val, sm__kctx_input(ctx, 1));
  sm_tensor_free(val);
  return s;
}

/* CountUpTo(ref, limit) / ResourceCountUpTo(resource, limit): the old value; the variable + 1.
 * A value already at limit is an OutOfRange error, as TF says it. */
typedef struct {
  int64_t limit;
  int ref;
} count_state;

static sm_status *count_prepare(const sm_node *node, void **state) {
  count_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->ref = strcmp(sm__node_op(node), "ResourceCountUpTo") != 0;
  sm_status *s = sm__node_attr_int(node, "limit", &st->limit);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *count_compute(const void *state, sm_kctx *ctx) {
  const count_state *st = state;
  sm_variable *v;
  sm_status *s = input_var(ctx, st->ref ? "CountUpTo" : "ResourceCountUpTo", &v);
  if (s) return s;
  int dt = sm__variable_dtype(v);
  if (dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "CountUpTo: the variable is %s, not int32 or int64", sm__array_dtype_str(dt));
  sm__variable_lock(v);
  sm_tensor *old = NULL, *nt = NULL, *out = NULL;
  s = sm__variable_read(v, &old);
  if (!s && sm_tensor_rank(old) != 0)
    s = sm_status_new(SM_INVALID_ARGUMENT, "Not a scalar tensor: %d dimensions", sm_tensor_rank(old));
  int64_t cur = s ? 0 : sm__array_int_at(old, 0);
  if (!s && cur >= st->limit) s = sm_status_new(SM_OUT_OF_RANGE, "Reached limit of %lld", (long long)st->limit);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, dt, 0, NULL, &out);
  if (!s) s = sm_tensor_new(dt, 0, NULL, &nt);
  if (!s) {
    if (dt == SM_INT32) {
      *(int32_t *)sm_tensor_data(out) = (int32_t)cur;
      *(int32_t *)sm_tensor_data(nt) = (int32_t)(cur + 1);
    } else {
      *(int64_t *)sm_tensor_data(out) = cur;
      *(int64_t *)sm_tensor_data(nt) = cur + 1;
    }
    s = sm__variable_assign(v, nt);
    nt = NULL;
  }
  sm__variable_unlock(v);
  sm_tensor_free(old);
  sm_tensor_free(nt);
  return s;
}

#define RS_K(name) {name, rs_prepare, rs_compute, free, 0}
#define RS_BOTH(name) RS_K("Resource" name), RS_K(name)

const sm_kernel sm_kernels_scatter_resource[] = {
    RS_BOTH("ScatterUpdate"), RS_BOTH("ScatterAdd"), RS_BOTH("ScatterSub"), RS_BOTH("ScatterMul"),
    RS_BOTH("ScatterDiv"), RS_BOTH("ScatterMin"), RS_BOTH("ScatterMax"), RS_BOTH("ScatterNdUpdate"),
    RS_BOTH("ScatterNdAdd"), RS_BOTH("ScatterNdSub"), RS_BOTH("ScatterNdMin"), RS_BOTH("ScatterNdMax"),
    {"ScatterNdNonAliasingAdd", NULL, nonaliasing_compute, NULL, 0},
    {"ResourceGatherNd", NULL, gather_nd_compute, NULL, 0},
    {"StridedSliceAssign", sm__array_prepare_strided_slice, ssa_compute, free, 0},
    {"ResourceStridedSliceAssign", sm__array_prepare_strided_slice, ssa_compute, free, 0},
    {"CountUpTo", count_prepare, count_compute, free, 0},
    {"ResourceCountUpTo", count_prepare, count_compute, free, 0},
    {0},
};
