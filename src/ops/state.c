/* state.c - the state kernel family: variables (resource and TF1 ref style).
 *
 * A variable handle is a DT_RESOURCE scalar whose element is the sm_variable * kept by the model's
 * sm_resources (resource.h); VarHandleOp and VariableV2 make one, every other op here takes one.
 * Values are never written in place: an assigned tensor may be shared with the graph (a Const, a
 * RestoreV2 output borrowing a read-only mapping), so Assign keeps a reference to it and
 * AssignAdd computes into a fresh tensor that replaces the old one.
 * A VarHandleOp read by one ReadVariableOp alone becomes one step, _SmReadVariable (the rule and
 * its kernel at the end: a Keras CNN's variable handles and reads were half the steps of a run).
 * The random initializers are in random.c (TF's Philox). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph/synth.h"
#include "runtime/kernel.h"
#include "runtime/rewrite.h"

/* ---- shared helpers ------------------------------------------------------------------------- */

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

/* A string attr as a new NUL-terminated copy; "" when the attr is absent. */
static sm_status *attr_cstr(const sm_node *n, const char *attr, char **out) {
  *out = NULL;
  const char *s = "";
  size_t len = 0;
  if (sm__node_attr(n, attr)) {
    sm_status *st = sm__node_attr_string(n, attr, &s, &len);
    if (st) return st;
  }
  if (memchr(s, 0, len)) return sm_status_new(SM_INVALID_ARGUMENT, "attr %s contains a NUL byte", attr);
  *out = malloc(len + 1);
  if (!*out) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(*out, s, len);
  (*out)[len] = 0;
  return NULL;
}

static sm_status *attr_int_or(const sm_node *n, const char *attr, int64_t dflt, int64_t *v) {
  *v = dflt;
  return sm__node_attr(n, attr) ? sm__node_attr_int(n, attr, v) : NULL;
}

static sm_status *attr_bool_or(const sm_node *n, const char *attr, int dflt, int *v) {
  *v = dflt;
  return sm__node_attr(n, attr) ? sm__node_attr_bool(n, attr, v) : NULL;
}

static sm_status *input_variable(sm_kctx *ctx, int i, sm_variable **v) {
  return sm__handle_variable(sm__kctx_input(ctx, i), i, v);
}

static int same_shape(const sm_tensor *a, const sm_tensor *b) {
  int r = sm_tensor_rank(a);
  return r == sm_tensor_rank(b) &&
         (r == 0 || !memcmp(sm_tensor_dims(a), sm_tensor_dims(b), (size_t)r * sizeof(int64_t)));
}

static sm_status *shape_mismatch(const char *what, const sm_tensor *var, const sm_tensor *val, const char *var_name) {
  char a[128], b[128];
  return sm_status_new(SM_INVALID_ARGUMENT, "%s variable %s of shape %s with a value of shape %s: shapes must be equal",
                       what, var_name, sm_shape_str(sm_tensor_rank(var), sm_tensor_dims(var), a, sizeof a),
                       sm_shape_str(sm_tensor_rank(val), sm_tensor_dims(val), b, sizeof b));
}

/* ---- variable creation: VarHandleOp, VariableV2, Variable ----------------------------------- */

/* A handle node's variable never changes for a given sm_resources (variables are never removed
 * from it, and the session frees its plans before it), so the handle tensor made for the last
 * resources seen is kept and handed out again: a run's VarHandleOp step is a reference, not a
 * locked lookup by name and a new tensor (MobileNetV2 has 260 of them a run). */
typedef struct {
  char *container;
  char *name; /* the resource key */
  int dtype;
  pthread_mutex_t mu;  /* runs of one plan may overlap */
  sm_resources *res;   /* the handle's resources (under mu) */
  sm_tensor *handle;   /* the last handle made (a reference held; under mu) */
} var_state;

static void var_release(void *p) {
  var_state *st = p;
  if (!st) return;
  free(st->container);
  free(st->name);
  sm_tensor_free(st->handle);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

/* TF's anonymous-variable marker: each kernel gets its own variable. */
static const char anonymous_name[] = "cd2c89b7-88b7-44c8-ad83-06c2a9158347";

static sm_status *var_prepare(const sm_node *node, void **state) {
  var_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  pthread_mutex_init(&st->mu, NULL);
  sm_status *s = sm__node_attr_type(node, "dtype", &st->dtype);
  if (!s) s = attr_cstr(node, "container", &st->container);
  if (!s) s = attr_cstr(node, "shared_name", &st->name);
  if (!s && (!st->name[0] || !strcmp(st->name, anonymous_name))) {
    /* No shared_name: keyed by node name (TF1 ref variables). The anonymous marker: a key no
     * shared_name can take, the node name behind a prefix TF never writes. */
    const char *nn = sm__node_name(node);
    const char *pre = st->name[0] ? "_sm_anonymous/" : "";
    free(st->name);
    size_t lp = strlen(pre), ln = strlen(nn);
    st->name = malloc(lp + ln + 1);
    if (!st->name) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
    } else {
      memcpy(st->name, pre, lp);
      memcpy(st->name + lp, nn, ln + 1);
    }
  }
  if (s) {
    var_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *var_compute(const void *state, sm_kctx *ctx) {
  var_state *st = (var_state *)state; /* the cached handle is the one thing a run writes, under mu */
  sm_resources *r = sm__kctx_resources(ctx);
  sm_tensor *h = NULL;
  pthread_mutex_lock(&st->mu);
  if (st->handle && st->res == r) h = sm_tensor_ref(st->handle);
  pthread_mutex_unlock(&st->mu);
  if (h) {
    sm__kctx_set_output(ctx, 0, h);
    return NULL;
  }
  sm_variable *v;
  sm_status *s = sm__resources_variable(r, st->container, st->name, st->dtype, &v);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_RESOURCE, 0, NULL, &h);
  if (s) return s;
  ((void **)sm_tensor_data(h))[0] = v;
  h = sm_tensor_ref(h);
  pthread_mutex_lock(&st->mu);
  sm_tensor_free(st->handle);
  st->handle = h;
  st->res = r;
  pthread_mutex_unlock(&st->mu);
  return NULL;
}

/* ---- ReadVariableOp / AssignVariableOp / VarIsInitializedOp / IsVariableInitialized --------- */

typedef struct {
  int dtype; /* -1: not checked */
  int validate_shape;
  int sub; /* AssignSub* */
} assign_state;

static sm_status *assign_prepare_common(const sm_node *node, const char *type_attr, const char *validate_attr,
                                        int validate_default, void **state) {
  assign_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->dtype = -1;
  sm_status *s = NULL;
  if (type_attr && sm__node_attr(node, type_attr)) s = sm__node_attr_type(node, type_attr, &st->dtype);
  if (!s && validate_attr) s = attr_bool_or(node, validate_attr, validate_default, &st->validate_shape);
  const char *op = sm__node_op(node);
  st->sub = strstr(op, "Sub") != NULL;
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *read_prepare(const sm_node *node, void **state) {
  return assign_prepare_common(node, "dtype", NULL, 0, state);
}

static sm_status *read_compute(const void *state, sm_kctx *ctx) {
  const assign_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (s) return s;
  if (st->dtype >= 0 && sm__variable_dtype(v) != st->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "trying to read variable %s with wrong dtype: expected %s, got %s",
                         sm__variable_name(v), dname(st->dtype), dname(sm__variable_dtype(v)));
  sm_tensor *t;
  s = sm__variable_read(v, &t);
  if (s) return s;
  sm__kctx_set_output(ctx, 0, t);
  return NULL;
}

/* Sets v = value (keeping a reference to value, never writing it). Shapes are checked when asked
 * and the variable holds a value. */
static sm_status *do_assign(sm_variable *v, const sm_tensor *value, int validate_shape) {
  if (sm_tensor_dtype(value) != sm__variable_dtype(v))
    return sm_status_new(SM_INVALID_ARGUMENT, "trying to assign variable %s with wrong dtype: expected %s, got %s",
                         sm__variable_name(v), dname(sm__variable_dtype(v)), dname(sm_tensor_dtype(value)));
  sm_status *s = NULL;
  sm__variable_lock(v);
  if (validate_shape && sm__variable_is_initialized(v)) {
    sm_tensor *old;
    s = sm__variable_read(v, &old);
    if (!s && !same_shape(old, value)) s = shape_mismatch("assigning", old, value, sm__variable_name(v));
    sm_tensor_free(old);
  }
  if (!s) s = sm__variable_assign(v, sm_tensor_ref((sm_tensor *)value));
  sm__variable_unlock(v);
  return s;
}

static sm_status *assign_var_prepare(const sm_node *node, void **state) {
  return assign_prepare_common(node, "dtype", "validate_shape", 0, state);
}

static sm_status *assign_var_compute(const void *state, sm_kctx *ctx) {
  const assign_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (s) return s;
  return do_assign(v, sm__kctx_input(ctx, 1), st->validate_shape);
}

/* TF1 Assign: in ref, value; out the ref (the same handle). */
static sm_status *assign_ref_prepare(const sm_node *node, void **state) {
  return assign_prepare_common(node, "T", "validate_shape", 1, state);
}

static sm_status *assign_ref_compute(const void *state, sm_kctx *ctx) {
  const assign_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (!s) s = do_assign(v, sm__kctx_input(ctx, 1), st->validate_shape);
  if (s) return s;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static sm_status *is_init_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (s) return s;
  sm_tensor *t;
  s = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 0, NULL, &t);
  if (s) return s;
  *(uint8_t *)sm_tensor_data(t) = sm__variable_is_initialized(v) ? 1 : 0;
  return NULL;
}

static sm_status *noop_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  (void)ctx;
  return NULL;
}

/* ---- AssignAdd / AssignSub (ref and resource) ---------------------------------------------- */

/* out = a + b (or a - b), elementwise over n elements. Integers wrap as TF's do (computed
 * unsigned, so no undefined overflow). */
static int add_sub(int dtype, const void *a, const void *b, void *out, int64_t n, int sub) {
#define ARITH(T, U)                                                                                    \
  do {                                                                                                 \
    const T *x = a, *y = b;                                                                            \
    T *z = out;                                                                                        \
    for (int64_t i = 0; i < n; i++) z[i] = (T)(sub ? (U)((U)x[i] - (U)y[i]) : (U)((U)x[i] + (U)y[i])); \
  } while (0)
#define FARITH(T)                                                           \
  do {                                                                      \
    const T *x = a, *y = b;                                                 \
    T *z = out;                                                             \
    for (int64_t i = 0; i < n; i++) z[i] = sub ? x[i] - y[i] : x[i] + y[i]; \
  } while (0)
  switch (dtype) {
    case SM_FLOAT:
      FARITH(float);
      break;
    case SM_DOUBLE:
      FARITH(double);
      break;
    case SM_COMPLEX64:
      n *= 2;
      FARITH(float);
      break;
    case SM_COMPLEX128:
      n *= 2;
      FARITH(double);
      break;
    case SM_INT8:
      ARITH(int8_t, uint8_t);
      break;
    case SM_INT16:
      ARITH(int16_t, uint16_t);
      break;
    case SM_INT32:
      ARITH(int32_t, uint32_t);
      break;
    case SM_INT64:
      ARITH(int64_t, uint64_t);
      break;
    case SM_UINT8:
      ARITH(uint8_t, uint8_t);
      break;
    case SM_UINT16:
      ARITH(uint16_t, uint16_t);
      break;
    case SM_UINT32:
      ARITH(uint32_t, uint32_t);
      break;
    case SM_UINT64:
      ARITH(uint64_t, uint64_t);
      break;
    default:
      return 0;
  }
  return 1;
#undef ARITH
#undef FARITH
}

/* v op= value under the variable's lock, into a new tensor (the old one may be shared). */
static sm_status *do_update(sm_variable *v, const sm_tensor *value, int sub) {
  int dtype = sm__variable_dtype(v);
  if (sm_tensor_dtype(value) != dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "updating variable %s of dtype %s with a value of dtype %s",
                         sm__variable_name(v), dname(dtype), dname(sm_tensor_dtype(value)));
  sm__variable_lock(v);
  sm_tensor *old = NULL, *nt = NULL;
  sm_status *s = sm__variable_read(v, &old);
  if (!s && !same_shape(old, value))
    s = shape_mismatch(sub ? "subtracting from" : "adding to", old, value, sm__variable_name(v));
  if (!s) s = sm_tensor_new(dtype, sm_tensor_rank(old), sm_tensor_dims(old), &nt);
  if (!s &&
      !add_sub(dtype, sm_tensor_data(old), sm_tensor_data(value), sm_tensor_data(nt), sm_tensor_num_elements(old), sub))
    s = sm_status_new(SM_UNIMPLEMENTED, "%s on dtype %s is not supported", sub ? "AssignSub" : "AssignAdd",
                      dname(dtype));
  if (!s) {
    s = sm__variable_assign(v, nt);
    nt = NULL;
  }
  sm__variable_unlock(v);
  sm_tensor_free(old);
  sm_tensor_free(nt);
  return s;
}

static sm_status *update_ref_prepare(const sm_node *node, void **state) {
  return assign_prepare_common(node, "T", NULL, 0, state);
}

static sm_status *update_ref_compute(const void *state, sm_kctx *ctx) {
  const assign_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (!s) s = do_update(v, sm__kctx_input(ctx, 1), st->sub);
  if (s) return s;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static sm_status *update_var_prepare(const sm_node *node, void **state) {
  return assign_prepare_common(node, "dtype", NULL, 0, state);
}

static sm_status *update_var_compute(const void *state, sm_kctx *ctx) {
  const assign_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (s) return s;
  return do_update(v, sm__kctx_input(ctx, 1), st->sub);
}

/* ---- ResourceGather ------------------------------------------------------------------------- */

typedef struct {
  int dtype;
} gather_state;

static sm_status *gather_prepare(const sm_node *node, void **state) {
  int64_t batch_dims;
  sm_status *s = attr_int_or(node, "batch_dims", 0, &batch_dims);
  if (s) return s;
  if (batch_dims != 0)
    return sm_status_new(SM_UNIMPLEMENTED, "ResourceGather with batch_dims=%lld is not supported (only 0)",
                         (long long)batch_dims);
  gather_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s = sm__node_attr_type(node, "dtype", &st->dtype);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *gather_compute(const void *state, sm_kctx *ctx) {
  const gather_state *st = state;
  sm_variable *v;
  sm_status *s = input_variable(ctx, 0, &v);
  if (s) return s;
  const sm_tensor *idx = sm__kctx_input(ctx, 1);
  int it = sm_tensor_dtype(idx);
  if (it != SM_INT32 && it != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int32 or int64, got %s", dname(it));
  if (sm__variable_dtype(v) != st->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "variable %s has dtype %s, the op expects %s", sm__variable_name(v),
                         dname(sm__variable_dtype(v)), dname(st->dtype));
  sm_tensor *val;
  s = sm__variable_read(v, &val);
  if (s) return s;
  int vr = sm_tensor_rank(val), ir = sm_tensor_rank(idx);
  if (vr < 1 || ir + vr - 1 > SM_MAX_RANK) {
    sm_tensor_free(val);
    return sm_status_new(SM_INVALID_ARGUMENT, "cannot gather from variable %s of rank %d with indices of rank %d",
                         sm__variable_name(v), vr, ir);
  }
  int64_t dims[SM_MAX_RANK];
  memcpy(dims, sm_tensor_dims(idx), (size_t)ir * sizeof *dims);
  memcpy(dims + ir, sm_tensor_dims(val) + 1, (size_t)(vr - 1) * sizeof *dims);
  int64_t rows = sm_tensor_dims(val)[0];
  int64_t inner = rows ? sm_tensor_num_elements(val) / rows : 0;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, st->dtype, ir + vr - 1, dims, &out);
  int64_t n = sm_tensor_num_elements(idx);
  size_t es = sm_dtype_size(st->dtype);
  for (int64_t i = 0; !s && i < n; i++) {
    int64_t k = it == SM_INT32 ? ((const int32_t *)sm_tensor_data(idx))[i] : ((const int64_t *)sm_tensor_data(idx))[i];
    if (k < 0 || k >= rows) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)", (long long)i, (long long)k,
                        (long long)rows);
      break;
    }
    if (st->dtype == SM_STRING) {
      for (int64_t j = 0; j < inner && !s; j++) {
        size_t len;
        const char *p = sm_tensor_string(val, k * inner + j, &len);
        s = sm_tensor_set_string(out, i * inner + j, p, len);
      }
    } else if (es) {
      memcpy((char *)sm_tensor_data(out) + (size_t)(i * inner) * es,
             (const char *)sm_tensor_data(val) + (size_t)(k * inner) * es, (size_t)inner * es);
    } else {
      s = sm_status_new(SM_UNIMPLEMENTED, "ResourceGather on dtype %s", dname(st->dtype));
    }
  }
  sm_tensor_free(val);
  return s;
}

/* ---- _SmReadVariable: VarHandleOp + its one ReadVariableOp ------------------------------------ */
/* The handle's attrs (container, shared_name, dtype: var_prepare's); the variable found in the
 * run's resources is kept with them (a session frees its plans before its resources, and no op
 * here removes a variable), so later runs skip the lookup. */
typedef struct {
  var_state *v;
  pthread_mutex_t mu;
  sm_resources *res;
  sm_variable *var;
} rv_state;

static void rv_release(void *p) {
  rv_state *st = p;
  if (!st) return;
  var_release(st->v);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

static sm_status *rv_prepare(const sm_node *node, void **state) {
  rv_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  pthread_mutex_init(&st->mu, NULL);
  sm_status *s = var_prepare(node, (void **)&st->v);
  if (s) {
    rv_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *rv_compute(const void *state, sm_kctx *ctx) {
  rv_state *st = (rv_state *)state; /* the kept variable is the one thing a run writes, under mu */
  sm_resources *r = sm__kctx_resources(ctx);
  sm_variable *v = NULL;
  pthread_mutex_lock(&st->mu);
  if (r && st->res == r) v = st->var;
  pthread_mutex_unlock(&st->mu);
  if (!v) {
    sm_status *s = sm__resources_variable(r, st->v->container, st->v->name, st->v->dtype, &v);
    if (s) return s;
    pthread_mutex_lock(&st->mu);
    st->res = r, st->var = v;
    pthread_mutex_unlock(&st->mu);
  }
  if (sm__variable_dtype(v) != st->v->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "trying to read variable %s with wrong dtype: expected %s, got %s",
                         sm__variable_name(v), dname(st->v->dtype), dname(sm__variable_dtype(v)));
  sm_tensor *t;
  sm_status *s = sm__variable_read(v, &t);
  if (s) return s;
  sm__kctx_set_output(ctx, 0, t);
  return NULL;
}

#define READ_RULE "VarHandleOp+ReadVariableOp -> _SmReadVariable"

/* A ReadVariableOp of a VarHandleOp that nothing else reads, with a shared_name (the handle's key:
 * without one it is the VarHandleOp's node name) and the same dtype attr on both. */
static sm_status *fuse_read(sm_rewrite *rw, int read) {
  const sm_node *rn = sm__rewrite_node(rw, read);
  if (sm__node_num_inputs(rn) != 1 || sm__node_num_outputs(rn) != 1) return NULL;
  sm_edge h = sm__rewrite_input(rw, read, 0);
  const sm_node *hn = h.node >= 0 ? sm__rewrite_node(rw, h.node) : NULL;
  if (!hn || strcmp(sm__node_op(hn), "VarHandleOp") || sm__node_num_inputs(hn) != 0 ||
      sm__rewrite_only_reader(rw, h) != read)
    return NULL;
  int dh = -1, dr = -2;
  const char *name = "";
  size_t len = 0;
  sm_status *s = sm__node_attr_type(hn, "dtype", &dh);
  if (!s) s = sm__node_attr_type(rn, "dtype", &dr);
  if (!s && sm__node_attr(hn, "shared_name")) s = sm__node_attr_string(hn, "shared_name", &name, &len);
  int named = !s && len && !(len == sizeof anonymous_name - 1 && !memcmp(name, anonymous_name, len));
  sm_status_free(s);
  int chain[2] = {h.node, read};
  if (!named || dh != dr || !sm__rewrite_can_fuse(rw, chain, 2)) return NULL;
  sm_node *f;
  if ((s = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(rn), "_SmReadVariable", &f))) return s;
  if (sm__node_attr(hn, "container")) s = sm__synth_copy_attr(f, "container", hn, "container");
  if (!s) s = sm__synth_copy_attr(f, "shared_name", hn, "shared_name");
  if (!s) s = sm__synth_set_type(f, "dtype", dh);
  if (!s) s = sm__synth_finish(f);
  if (s) {
    sm__synth_free(f);
    return s;
  }
  return sm__rewrite_replace(rw, READ_RULE, chain, 2, f);
}

const sm_rewrite_rule sm_rewrites_state[] = {
    {"ReadVariableOp", READ_RULE, fuse_read},
    {0},
};

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_state[] = {
    {"VarHandleOp", var_prepare, var_compute, var_release, SM_KERNEL_PRELOAD},
    {"VariableV2", var_prepare, var_compute, var_release, 0},
    {"Variable", var_prepare, var_compute, var_release, 0},
    {"ReadVariableOp", read_prepare, read_compute, free, SM_KERNEL_PRELOAD},
    {"_SmReadVariable", rv_prepare, rv_compute, rv_release, SM_KERNEL_PRELOAD},
    {"AssignVariableOp", assign_var_prepare, assign_var_compute, free, 0},
    {"AssignAddVariableOp", update_var_prepare, update_var_compute, free, 0},
    {"AssignSubVariableOp", update_var_prepare, update_var_compute, free, 0},
    {"VarIsInitializedOp", NULL, is_init_compute, NULL, 0},
    {"IsVariableInitialized", NULL, is_init_compute, NULL, 0},
    {"DestroyResourceOp", NULL, noop_compute, NULL, 0},
    {"DisableCopyOnRead", NULL, noop_compute, NULL, 0},
    {"ResourceGather", gather_prepare, gather_compute, free, 0},
    {"Assign", assign_ref_prepare, assign_ref_compute, free, 0},
    {"AssignAdd", update_ref_prepare, update_ref_compute, free, 0},
    {"AssignSub", update_ref_prepare, update_ref_compute, free, 0},
    {0},
};
