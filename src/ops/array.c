/* array.c - the array kernel family table, and the graph plumbing kernels: Const, Placeholder,
 * PlaceholderWithDefault, Identity and its aliases, IdentityN, NoOp, EnsureShape, CheckNumerics,
 * Assert. Plumbing never copies: it forwards references (Const hands out one more reference to
 * the tensor decoded once at prepare). Spec: shared/spec/ops.md §3.1; shape and array ops live in
 * array_shape.c, array_slice.c, array_move.c and array_gather.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/array_internal.h"

/* ---- Const --------------------------------------------------------------------------------- */

/* A Const's tensor, decoded once at prepare, and what it took from the load budget. */
typedef struct const_state {
  sm_tensor *t; /* NULL: a check-only load (validate) that never runs */
  sm_load_budget *budget;
  int64_t bytes;
} const_state;

static sm_status *const_prepare(const sm_node *node, void **state) {
  sm_load_budget *b = sm__load_budget_current();
  const Tensorflow__AttrValue *v = sm__node_attr(node, "value");
  int64_t bytes = 0;
  sm_status *s = NULL;
  if (b && b->check_only) { /* validate: every check, nothing materialised */
    if (!v || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TENSOR || !v->tensor) {
      sm_tensor *none = NULL; /* no tensor to decode: its error, as a load gives it */
      s = sm__node_attr_tensor(node, "value", &none);
      sm_tensor_free(none);
      return s ? s : sm_status_new(SM_INTERNAL, "attr 'value' holds no tensor");
    }
    s = sm_status_prefix(sm__tensor_proto_check(v->tensor, &bytes), "attr 'value'");
    if (!s) s = sm__load_budget_room(b, bytes, "constant");
    int dt;
    if (!s && v && v->tensor && !sm__node_attr_type(node, "dtype", &dt) && dt != (int)v->tensor->dtype)
      s = sm_status_new(SM_INVALID_ARGUMENT, "Type mismatch between value (%s) and dtype (%s)",
                        sm__array_dtype_str((int)v->tensor->dtype), sm__array_dtype_str(dt));
    if (s) return s;
    return (*state = sm__calloc(sizeof(const_state))) ? NULL
                                                       : sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a constant");
  }
  sm_tensor *t = NULL;
  if ((s = sm__node_attr_tensor(node, "value", &t))) return s;
  int dt;
  if (!sm__node_attr_type(node, "dtype", &dt) && dt != sm_tensor_dtype(t)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Type mismatch between value (%s) and dtype (%s)",
                      sm__array_dtype_str(sm_tensor_dtype(t)), sm__array_dtype_str(dt));
    sm_tensor_free(t);
    return s;
  }
  const_state *cs = sm__calloc(sizeof *cs);
  if (!cs) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a constant");
  if (!s && b && (s = sm__tensor_proto_check(v->tensor, &bytes)) == NULL) s = sm__load_budget_take(b, 0, bytes, "constant");
  if (s) {
    sm__free(cs);
    sm_tensor_free(t);
    return s;
  }
  cs->t = t;
  cs->budget = b;
  cs->bytes = bytes;
  *state = cs;
  return NULL;
}

static sm_status *const_compute(const void *state, sm_kctx *ctx) {
  const const_state *cs = state;
  if (!cs->t) return sm_status_new(SM_FAILED_PRECONDITION, "a constant of a check-only load has no value");
  /* Shared between runs and threads: the reference count is atomic, and a shared tensor is never
   * written in place by consumers. */
  sm__kctx_set_output(ctx, 0, sm_tensor_ref(cs->t));
  return NULL;
}

static void const_release(void *state) {
  const_state *cs = state;
  sm__load_budget_give(cs->budget, 0, cs->bytes);
  sm_tensor_free(cs->t);
  sm__free(cs);
}

/* ---- Placeholder ---------------------------------------------------------------------------- */

static sm_status *placeholder_prepare(const sm_node *node, void **state) {
  int dt = sm__node_output_dtype(node, 0);
  int rank = -1;
  int64_t dims[SM_MAX_RANK];
  sm_status *s = sm__node_attr_shape(node, "shape", &rank, dims);
  if (s) {
    sm_status_free(s);
    rank = -1;
  }
  /* TF names the shape only when its rank is known and non-zero (PartialTensorShape::DebugString:
   * "[?,3]"). */
  char shape[512] = "";
  if (rank > 0) {
    size_t o = 0;
    shape[o++] = '[';
    for (int i = 0; i < rank && o < sizeof shape - 32; i++) {
      if (dims[i] < 0)
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s?", i ? "," : "");
      else
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    snprintf(shape + o, sizeof shape - o, "]");
  }
  const char *name = sm__node_name(node);
  size_t cap = strlen(name) + strlen(shape) + 128;
  char *msg = malloc(cap);
  if (!msg) return sm_status_new(SM_NO_MEMORY, "out of memory");
  snprintf(msg, cap, "You must feed a value for placeholder tensor '%s' with dtype %s%s%s", name,
           sm__array_dtype_str(dt), rank > 0 ? " and shape " : "", shape);
  *state = msg;
  return NULL;
}

/* Runs only when the placeholder is not fed. */
static sm_status *placeholder_compute(const void *state, sm_kctx *ctx) {
  (void)ctx;
  return sm_status_new(SM_INVALID_ARGUMENT, "%s", (const char *)state);
}

/* ---- Identity family, NoOp ------------------------------------------------------------------- */

static sm_status *forward_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static sm_status *identity_n_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int n = sm__kctx_num_inputs(ctx);
  if (sm__kctx_num_outputs(ctx) < n) n = sm__kctx_num_outputs(ctx);
  for (int i = 0; i < n; i++) sm__kctx_forward(ctx, i, i);
  return NULL;
}

static sm_status *noop_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  (void)ctx;
  return NULL;
}

/* ---- EnsureShape ---------------------------------------------------------------------------- */

typedef struct {
  int rank; /* -1: unknown rank, anything matches */
  int64_t dims[SM_MAX_RANK];
} shape_state;

static sm_status *ensure_shape_prepare(const sm_node *node, void **state) {
  shape_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_shape(node, "shape", &st->rank, st->dims);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

const char *sm__array_partial_shape_str(int rank, const int64_t *dims, char *buf, size_t cap) {
  if (rank < 0) {
    snprintf(buf, cap, "<unknown>");
    return buf;
  }
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && o + 24 < cap; i++) {
    if (dims[i] < 0)
      o += (size_t)snprintf(buf + o, cap - o, "%s?", i ? "," : "");
    else
      o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)dims[i]);
  }
  snprintf(buf + o, cap - o, "]");
  return buf;
}

static sm_status *ensure_shape_compute(const void *state, sm_kctx *ctx) {
  const shape_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int ok = 1;
  if (st->rank >= 0) {
    if (sm_tensor_rank(x) != st->rank) ok = 0;
    for (int i = 0; ok && i < st->rank; i++)
      if (st->dims[i] >= 0 && st->dims[i] != sm_tensor_dims(x)[i]) ok = 0;
  }
  if (!ok) {
    char a[256], b[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape of tensor input %s is not compatible with expected shape %s.",
                         sm__array_shape_str(x, a, sizeof a), sm__array_partial_shape_str(st->rank, st->dims, b, sizeof b));
  }
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* ---- CheckNumerics -------------------------------------------------------------------------- */

sm_status *sm__array_prepare_check_numerics(const sm_node *node, void **state) {
  const char *m = "";
  size_t len = 0;
  sm_status *s = sm__node_attr_string(node, "message", &m, &len);
  if (s) {
    sm_status_free(s);
    m = "";
    len = 0;
  }
  char *copy = malloc(len + 1);
  if (!copy) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(copy, m, len);
  copy[len] = 0;
  *state = copy;
  return NULL;
}

static sm_status *check_numerics_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int64_t n = sm_tensor_num_elements(x);
  const void *p = sm_tensor_data(x);
  int nan = 0, inf = 0;
  switch (sm_tensor_dtype(x)) {
  case SM_FLOAT:
    for (int64_t i = 0; i < n; i++) {
      float v = ((const float *)p)[i];
      nan |= isnan(v);
      inf |= isinf(v);
    }
    break;
  case SM_DOUBLE:
    for (int64_t i = 0; i < n; i++) {
      double v = ((const double *)p)[i];
      nan |= isnan(v);
      inf |= isinf(v);
    }
    break;
  case SM_HALF:
  case SM_BFLOAT16: {
    /* Exponent all ones: Inf when the mantissa is zero, NaN otherwise. */
    uint16_t em = sm_tensor_dtype(x) == SM_HALF ? 0x7c00 : 0x7f80, mm = sm_tensor_dtype(x) == SM_HALF ? 0x03ff : 0x007f;
    for (int64_t i = 0; i < n; i++) {
      uint16_t v = ((const uint16_t *)p)[i];
      if ((v & em) == em) {
        if (v & mm)
          nan = 1;
        else
          inf = 1;
      }
    }
    break;
  }
  default:
    return sm_status_new(SM_INVALID_ARGUMENT, "CheckNumerics takes a floating-point tensor, not %s",
                         sm__array_dtype_str(sm_tensor_dtype(x)));
  }
  if (nan || inf)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s : Tensor had %s values", (const char *)state,
                         nan && inf ? "Inf and NaN" : nan ? "NaN" : "Inf");
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* ---- Assert --------------------------------------------------------------------------------- */

static sm_status *assert_prepare(const sm_node *node, void **state) {
  int64_t summarize = 3;
  sm_status *s = sm__node_attr_int(node, "summarize", &summarize);
  if (s) {
    sm_status_free(s);
    summarize = 3;
  }
  int64_t *st = malloc(sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *st = summarize;
  *state = st;
  return NULL;
}

/* Shortest text that reads back as the same value, like TF's StrCat of a float. */
static int fmt_real(char *buf, size_t cap, double v, int is_float) {
  if (isnan(v)) return snprintf(buf, cap, "nan");
  if (isinf(v)) return snprintf(buf, cap, v < 0 ? "-inf" : "inf");
  for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
    int w = snprintf(buf, cap, "%.*g", prec, v);
    if (is_float ? (float)strtod(buf, NULL) == (float)v : strtod(buf, NULL) == v) return w;
  }
  return snprintf(buf, cap, "%.17g", v);
}

/* Tensor::SummarizeValue: up to `max` elements, space-separated, "..." when cut. */
static void summarize(const sm_tensor *t, int64_t max, char *buf, size_t cap, size_t *o) {
  int64_t n = sm_tensor_num_elements(t);
  int64_t shown = max < 0 || max > n ? n : max;
  int dt = sm_tensor_dtype(t);
  const void *p = sm_tensor_data(t);
  for (int64_t i = 0; i < shown && *o + 64 < cap; i++) {
    char e[64];
    if (i) buf[(*o)++] = ' ';
    if (dt == SM_STRING) {
      size_t len;
      const char *s = sm_tensor_string(t, i, &len);
      size_t k = len < cap - *o - 16 ? len : cap - *o - 16;
      memcpy(buf + *o, s, k);
      *o += k;
      continue;
    }
    if (dt == SM_FLOAT)
      fmt_real(e, sizeof e, ((const float *)p)[i], 1);
    else if (dt == SM_DOUBLE)
      fmt_real(e, sizeof e, ((const double *)p)[i], 0);
    else if (dt == SM_BOOL)
      snprintf(e, sizeof e, "%d", ((const uint8_t *)p)[i] ? 1 : 0);
    else if (dt == SM_UINT64)
      snprintf(e, sizeof e, "%llu", (unsigned long long)((const uint64_t *)p)[i]);
    else if (sm__array_is_int(dt))
      snprintf(e, sizeof e, "%lld", (long long)sm__array_int_at(t, i));
    else
      snprintf(e, sizeof e, "?");
    size_t k = strlen(e);
    memcpy(buf + *o, e, k);
    *o += k;
  }
  if (shown < n && *o + 4 < cap) {
    memcpy(buf + *o, "...", 3);
    *o += 3;
  }
  buf[*o] = 0;
}

static sm_status *assert_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *cond = sm__kctx_input(ctx, 0);
  if (sm_tensor_num_elements(cond) != 1 || sm_tensor_rank(cond) > 1 || sm_tensor_dtype(cond) != SM_BOOL) {
    char a[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "In[0] should be a scalar: %s", sm__array_shape_str(cond, a, sizeof a));
  }
  if (((const uint8_t *)sm_tensor_data(cond))[0]) return NULL;
  char msg[4096];
  size_t o = (size_t)snprintf(msg, sizeof msg, "assertion failed: ");
  for (int i = 1; i < sm__kctx_num_inputs(ctx) && o + 80 < sizeof msg; i++) {
    if (i > 1) msg[o++] = ' ';
    msg[o++] = '[';
    summarize(sm__kctx_input(ctx, i), *(const int64_t *)state, msg, sizeof msg - 2, &o);
    msg[o++] = ']';
    msg[o] = 0;
  }
  return sm_status_new(SM_INVALID_ARGUMENT, "%s", msg);
}

/* ---- the table -------------------------------------------------------------------------------- */

#define K(op, name) {op, sm__array_prepare_##name, sm__array_compute_##name, free, 0}
#define KC(op, name) {op, NULL, sm__array_compute_##name, NULL, 0}

const sm_kernel sm_kernels_array[] = {
    {"Const", const_prepare, const_compute, const_release, SM_KERNEL_PRELOAD},
    {"Placeholder", placeholder_prepare, placeholder_compute, free, 0},
    {"PlaceholderWithDefault", NULL, forward_compute, NULL, 0},
    {"Identity", NULL, forward_compute, NULL, 0},
    {"Snapshot", NULL, forward_compute, NULL, 0},
    {"StopGradient", NULL, forward_compute, NULL, 0},
    {"PreventGradient", NULL, forward_compute, NULL, 0},
    {"IdentityN", NULL, identity_n_compute, NULL, 0},
    {"NoOp", NULL, noop_compute, NULL, 0},
    /* The library never prints: Print passes its input on, PrintV2 does nothing. */
    {"Print", NULL, forward_compute, NULL, 0},
    {"PrintV2", NULL, noop_compute, NULL, 0},
    {"EnsureShape", ensure_shape_prepare, ensure_shape_compute, free, 0},
    {"CheckNumerics", sm__array_prepare_check_numerics, check_numerics_compute, free, 0},
    {"Assert", assert_prepare, assert_compute, free, 0},
    KC("Reshape", reshape),
    K("Squeeze", squeeze),
    KC("ExpandDims", expand_dims),
    KC("Shape", shape),
    KC("ShapeN", shape_n),
    KC("BroadcastArgs", broadcast_args),
    KC("BroadcastGradientArgs", broadcast_gradient_args),
    KC("Size", size),
    KC("Rank", rank),
    KC("Fill", fill),
    KC("ZerosLike", zeros_like),
    KC("OnesLike", ones_like),
    KC("Range", range),
    K("StridedSlice", strided_slice),
    {"TensorStridedSliceUpdate", sm__array_prepare_strided_slice, sm__array_compute_tensor_strided_slice_update, free, 0},
    KC("Slice", slice),
    KC("Split", split),
    KC("SplitV", split_v),
    K("Unpack", unpack),
    KC("ConcatV2", concat_v2),
    KC("Concat", concat),
    K("Pack", pack),
    KC("Transpose", transpose),
    KC("Tile", tile),
    KC("Pad", pad),
    KC("PadV2", pad),
    K("MirrorPad", mirror_pad),
    KC("ReverseV2", reverse_v2),
    KC("BroadcastTo", broadcast_to),
    K("GatherV2", gather_v2),
    KC("Gather", gather),
    KC("GatherNd", gather_nd),
    K("OneHot", one_hot),
    KC("Where", where),
    KC("SpaceToBatchND", space_to_batch_nd),
    KC("BatchToSpaceND", batch_to_space_nd),
    {0},
};
