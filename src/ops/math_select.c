/* math_select.c - Select (v1), SelectV2, ClipByValue and AddN (complex too: pairs added as reals).
 *
 * SelectV2 broadcasts condition, then and else together (the shared 3-way iterator of math.c);
 * Select keeps TF1's rule (condition a scalar, the same shape as `then`, or a vector over its
 * first dimension) and then runs the same loop with the condition reshaped to broadcast.
 * ClipByValue takes scalar or same-shape bounds and computes max(min(t, hi), lo) so NaN stays NaN
 * and lo wins when lo > hi, as TF. AddN needs equal shapes. Spec: ops.md §3.4 (Select), §3.5. */
/* GCC's -O2 cost model ("very cheap") vectorizes no loop whose trip count is unknown; these
 * elementwise loops are the point of the file, so ask for the "cheap" model (clang needs nothing). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef struct sel_state {
  int v2;
} sel_state;

sm_status *sm__math_select_prepare(const sm_node *node, void **state) {
  sel_state *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->v2 = !strcmp(sm__node_op(node), "SelectV2");
  *state = s;
  return NULL;
}

#define SEL_LOOP(T)                                                                            \
  do {                                                                                         \
    const T *tp = (const T *)t + ot, *ep = (const T *)e + oe;                                  \
    T *zp = (T *)z + zo;                                                                       \
    for (int64_t i = 0; i < inner; i++) zp[i] = cp[i * sc] ? tp[i * st] : ep[i * se];           \
  } while (0)

static sm_status *select_run(const sm_bcast *b, const sm_tensor *c, const sm_tensor *tt, const sm_tensor *et,
                             sm_tensor *zt) {
  int last = b->rank - 1;
  int64_t inner = b->dims[last], rows = b->n / inner;
  int64_t sc = b->strides[0][last], st = b->strides[1][last], se = b->strides[2][last];
  int dt = sm_tensor_dtype(tt);
  size_t es = sm_dtype_size(dt);
  const uint8_t *cond = sm_tensor_data(c);
  const void *t = sm_tensor_data(tt), *e = sm_tensor_data(et);
  void *z = sm_tensor_data(zt);
  sm_bcast_it it;
  sm__math_bcast_seek(b, 3, 0, &it);
  for (int64_t r = 0; r < rows; r++) {
    const uint8_t *cp = cond + it.off[0];
    int64_t ot = it.off[1], oe = it.off[2], zo = r * inner;
    if (dt == SM_STRING) {
      for (int64_t i = 0; i < inner; i++) {
        size_t len;
        const char *v = cp[i * sc] ? sm_tensor_string(tt, ot + i * st, &len) : sm_tensor_string(et, oe + i * se, &len);
        sm_status *s = sm_tensor_set_string(zt, zo + i, v, len);
        if (s) return s;
      }
    } else {
      switch (es) {
        case 1: SEL_LOOP(uint8_t); break;
        case 2: SEL_LOOP(uint16_t); break;
        case 4: SEL_LOOP(uint32_t); break;
        case 8: SEL_LOOP(uint64_t); break;
        default:
          for (int64_t i = 0; i < inner; i++) {
            const char *src = cp[i * sc] ? (const char *)t + (size_t)(ot + i * st) * es
                                         : (const char *)e + (size_t)(oe + i * se) * es;
            memcpy((char *)z + (size_t)(zo + i) * es, src, es);
          }
      }
    }
    sm__math_bcast_next(b, 3, &it);
  }
  return NULL;
}

sm_status *sm__math_select_compute(const void *state, sm_kctx *ctx) {
  const sel_state *s = state;
  const sm_tensor *c = sm__kctx_input(ctx, 0), *t = sm__kctx_input(ctx, 1), *e = sm__kctx_input(ctx, 2);
  char a[256], b2[256], d[256];
  if (sm_tensor_dtype(c) != SM_BOOL)
    return sm_status_new(SM_INVALID_ARGUMENT, "condition must be bool, got %s",
                         sm_dtype_name(sm_tensor_dtype(c)) ? sm_dtype_name(sm_tensor_dtype(c)) : "?");
  if (sm_tensor_dtype(t) != sm_tensor_dtype(e))
    return sm_status_new(SM_INVALID_ARGUMENT, "then is %s but else is %s", sm_dtype_name(sm_tensor_dtype(t)),
                         sm_dtype_name(sm_tensor_dtype(e)));
  int ranks[3] = {sm_tensor_rank(c), sm_tensor_rank(t), sm_tensor_rank(e)};
  const int64_t *dims[3] = {sm_tensor_dims(c), sm_tensor_dims(t), sm_tensor_dims(e)};
  int64_t cd[SM_MAX_RANK];
  if (!s->v2) {
    /* TF1 rule: then and else equal; condition scalar, equal, or a vector over dim 0 */
    int tr = ranks[1];
    if (tr != ranks[2] || memcmp(dims[1], dims[2], (size_t)tr * sizeof(int64_t)))
      return sm_status_new(SM_INVALID_ARGUMENT, "'then' and 'else' must have the same size.  but received: %s vs. %s",
                           sm_shape_str(tr, dims[1], a, sizeof a), sm_shape_str(ranks[2], dims[2], b2, sizeof b2));
    if (ranks[0] == 1 && tr != 1) {
      if (tr == 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "'then' must be at least a vector, but saw shape: []");
      if (dims[0][0] != dims[1][0])
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Number of batches of 'then' must match size of 'cond', but saw: %lld vs. %lld",
                             (long long)dims[1][0], (long long)dims[0][0]);
      cd[0] = dims[0][0];
      for (int k = 1; k < tr; k++) cd[k] = 1;
      ranks[0] = tr;
      dims[0] = cd;
    } else if (ranks[0] != 0 && (ranks[0] != tr || memcmp(dims[0], dims[1], (size_t)tr * sizeof(int64_t)))) {
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Inputs to operation Select of type Select must have the same size and shape.  Input 0: %s "
                           "!= input 1: %s",
                           sm_shape_str(ranks[0], dims[0], a, sizeof a), sm_shape_str(tr, dims[1], b2, sizeof b2));
    }
  }
  sm_bcast bc;
  if (!sm__math_bcast_init(&bc, 3, ranks, dims))
    return sm_status_new(SM_INVALID_ARGUMENT, "condition %s, then %s, and else %s must be broadcastable",
                         sm_shape_str(ranks[0], dims[0], a, sizeof a), sm_shape_str(ranks[1], dims[1], b2, sizeof b2),
                         sm_shape_str(ranks[2], dims[2], d, sizeof d));
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(t), bc.out_rank, bc.out_dims, &z);
  if (st || bc.n == 0) return st;
  return select_run(&bc, c, t, e, z);
}

/* ---- ClipByValue ------------------------------------------------------------------------------ */
#define ID(v) (v)
#define HALF_IN(v) sm__half_to_f32(v)
#define HALF_OUT(v) sm__f32_to_half(v)
#define BF16_IN(v) sm__bf16_to_f32(v)
#define BF16_OUT(v) sm__f32_to_bf16(v)
#define CLIP_LOOP(T, V, LOAD, STORE)                                                \
  do {                                                                              \
    const T *x = xp, *mn = lp, *mx = hp;                                            \
    T *y = yp;                                                                      \
    for (int64_t i = 0; i < n; i++) {                                               \
      V v = LOAD(x[i]), l = LOAD(mn[i * ls]), h = LOAD(mx[i * hs]);                 \
      v = h < v ? h : v;                                                            \
      y[i] = STORE(v < l ? l : v);                                                  \
    }                                                                               \
  } while (0)

sm_status *sm__math_clip_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0), *lo = sm__kctx_input(ctx, 1), *hi = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(t), rank = sm_tensor_rank(t);
  const int64_t *td = sm_tensor_dims(t);
  if (sm_tensor_dtype(lo) != dt || sm_tensor_dtype(hi) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "ClipByValue: t, clip_value_min and clip_value_max differ in dtype");
  int64_t n = sm_tensor_num_elements(t);
  const sm_tensor *b[2] = {lo, hi};
  int64_t stride[2];
  for (int k = 0; k < 2; k++) {
    int br = sm_tensor_rank(b[k]);
    if (br == 0) {
      stride[k] = 0;
    } else if (br == rank && !memcmp(sm_tensor_dims(b[k]), td, (size_t)rank * sizeof(int64_t))) {
      stride[k] = 1;
    } else {
      char s0[256], s1[256], s2[256];
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "clip_value_min and clip_value_max must be either of the same shape as input, or a "
                           "scalar. input shape: %sclip_value_min shape: %sclip_value_max shape: %s",
                           sm_shape_str(rank, td, s0, sizeof s0),
                           sm_shape_str(sm_tensor_rank(lo), sm_tensor_dims(lo), s1, sizeof s1),
                           sm_shape_str(sm_tensor_rank(hi), sm_tensor_dims(hi), s2, sizeof s2));
    }
  }
  int64_t ls = stride[0], hs = stride[1];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, rank, td, &z);
  if (st || n == 0) return st;
  const void *xp = sm_tensor_data(t), *lp = sm_tensor_data(lo), *hp = sm_tensor_data(hi);
  void *yp = sm_tensor_data(z);
  switch (dt) {
    case SM_FLOAT: CLIP_LOOP(float, float, ID, ID); break;
    case SM_DOUBLE: CLIP_LOOP(double, double, ID, ID); break;
    case SM_HALF: CLIP_LOOP(uint16_t, float, HALF_IN, HALF_OUT); break;
    case SM_BFLOAT16: CLIP_LOOP(uint16_t, float, BF16_IN, BF16_OUT); break;
    case SM_INT8: CLIP_LOOP(int8_t, int8_t, ID, ID); break;
    case SM_INT16: CLIP_LOOP(int16_t, int16_t, ID, ID); break;
    case SM_INT32: CLIP_LOOP(int32_t, int32_t, ID, ID); break;
    case SM_INT64: CLIP_LOOP(int64_t, int64_t, ID, ID); break;
    case SM_UINT8: CLIP_LOOP(uint8_t, uint8_t, ID, ID); break;
    case SM_UINT16: CLIP_LOOP(uint16_t, uint16_t, ID, ID); break;
    case SM_UINT32: CLIP_LOOP(uint32_t, uint32_t, ID, ID); break;
    case SM_UINT64: CLIP_LOOP(uint64_t, uint64_t, ID, ID); break;
    default: return sm__math_bad_dtype("ClipByValue", dt);
  }
  return NULL;
}

/* ---- AddN ------------------------------------------------------------------------------------- */
#define ADDN_F(T)                                                    \
  for (int64_t i = 0; i < n; i++) ((T *)acc)[i] += ((const T *)p)[i]; \
  break;
#define ADDN_I(T, UT)                                                                                \
  for (int64_t i = 0; i < n; i++) ((T *)acc)[i] = (T)((UT)((T *)acc)[i] + (UT)((const T *)p)[i]); \
  break;

sm_status *sm__math_addn_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int nin = sm__kctx_num_inputs(ctx);
  if (nin < 1) return sm_status_new(SM_INVALID_ARGUMENT, "AddN needs at least one input");
  const sm_tensor *x0 = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x0), rank = sm_tensor_rank(x0);
  const int64_t *d0 = sm_tensor_dims(x0);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && !sm__math_is_f16(dt) && dt != SM_COMPLEX64 && dt != SM_COMPLEX128 &&
      (sm__math_tindex(dt) < 0 || dt == SM_BOOL))
    return sm__math_bad_dtype("AddN", dt);
  for (int k = 1; k < nin; k++) {
    const sm_tensor *xk = sm__kctx_input(ctx, k);
    if (sm_tensor_dtype(xk) != dt)
      return sm_status_new(SM_INVALID_ARGUMENT, "AddN: input %d is %s, input 0 is %s", k,
                           sm_dtype_name(sm_tensor_dtype(xk)), sm_dtype_name(dt));
    if (sm_tensor_rank(xk) != rank || memcmp(sm_tensor_dims(xk), d0, (size_t)rank * sizeof(int64_t))) {
      char a[256], b[256];
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Inputs to operation AddN of type AddN must have the same size and shape.  Input 0: %s != "
                           "input %d: %s",
                           sm_shape_str(rank, d0, a, sizeof a), k,
                           sm_shape_str(sm_tensor_rank(xk), sm_tensor_dims(xk), b, sizeof b));
    }
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, rank, d0, &z);
  int64_t n = sm_tensor_num_elements(x0);
  if (st || n == 0) return st;
  if (sm__math_is_f16(dt)) {
    float *acc = sm__kctx_scratch(ctx, (size_t)n * 2 * sizeof(float), &st);
    if (!acc) return st;
    float *tmp = acc + n;
    sm__math_to_f32(dt, sm_tensor_data(x0), acc, n);
    for (int k = 1; k < nin; k++) {
      sm__math_to_f32(dt, sm_tensor_data(sm__kctx_input(ctx, k)), tmp, n);
      for (int64_t i = 0; i < n; i++) acc[i] += tmp[i];
    }
    sm__math_from_f32(dt, acc, sm_tensor_data(z), n);
    sm__kctx_scratch_free(ctx, acc);
    return NULL;
  }
  void *acc = sm_tensor_data(z);
  memcpy(acc, sm_tensor_data(x0), sm_tensor_nbytes(x0));
  if (dt == SM_COMPLEX64 || dt == SM_COMPLEX128) { /* the (re, im) pairs add as reals */
    dt = dt == SM_COMPLEX64 ? SM_FLOAT : SM_DOUBLE;
    n *= 2;
  }
  for (int k = 1; k < nin; k++) {
    const void *p = sm_tensor_data(sm__kctx_input(ctx, k));
    switch (dt) {
      case SM_FLOAT: ADDN_F(float)
      case SM_DOUBLE: ADDN_F(double)
      case SM_INT8: ADDN_I(int8_t, uint32_t)
      case SM_INT16: ADDN_I(int16_t, uint32_t)
      case SM_INT32: ADDN_I(int32_t, uint32_t)
      case SM_INT64: ADDN_I(int64_t, uint64_t)
      case SM_UINT8: ADDN_I(uint8_t, uint32_t)
      case SM_UINT16: ADDN_I(uint16_t, uint32_t)
      case SM_UINT32: ADDN_I(uint32_t, uint32_t)
      case SM_UINT64: ADDN_I(uint64_t, uint64_t)
    }
  }
  return NULL;
}
