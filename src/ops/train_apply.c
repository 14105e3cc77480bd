/* train_apply.c - the train_apply kernel family: the optimizer update ops of TF1 optimizers and
 * Keras 2 (tf_keras) optimizers, Apply<Opt> / ResourceApply<Opt> and their sparse forms
 * SparseApply<Opt> / ResourceSparseApply<Opt>, for GradientDescent, ProximalGradientDescent,
 * Adadelta, Adagrad, AdagradV2, ProximalAdagrad, AdagradDA, Ftrl, FtrlV2, Momentum, KerasMomentum,
 * Adam, AdamWithAmsgrad, AdaMax, RMSProp, CenteredRMSProp, AddSign and PowerSign.
 *
 * The variable and its slots arrive as variable handles (resource handles, or TF1 ref inputs,
 * which the executor hands over as handles too: kernel.h). As state.c's AssignAdd does, a variable's
 * value is never written in place (it may be shared with a Const or a mapped checkpoint): under the
 * variables' locks (taken in address order, so two updates of overlapping sets cannot deadlock)
 * each value is copied, updated and assigned back. use_locking is thus always honoured. The ref
 * forms output the variable's ref (input 0), as TensorFlow's do.
 *
 * Arithmetic: float, double, complex64 and complex128 are updated in their own type; half and
 * bfloat16 in float, rounded back once per element (TensorFlow rounds after each operation: the
 * results may differ in the last bits). The formulas are in train_apply_impl.h. */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "runtime/kernel.h"

enum { TY_HALF = 1, TY_BF16 = 2, TY_F32 = 4, TY_F64 = 8, TY_CPLX = 16 };
#define TY_ALL (TY_HALF | TY_BF16 | TY_F32 | TY_F64 | TY_CPLX)
#define TY_REAL (TY_HALF | TY_BF16 | TY_F32 | TY_F64)
#define TY_FD (TY_F32 | TY_F64)

enum {
  K_GD, K_PROXIMAL_GD, K_ADADELTA, K_ADAGRAD, K_ADAGRADV2, K_PROXIMAL_ADAGRAD, K_ADAGRAD_DA, K_FTRL, K_FTRL_V2,
  K_MOMENTUM, K_KERAS_MOMENTUM, K_ADAM, K_AMSGRAD, K_ADAMAX, K_RMSPROP, K_CENTERED_RMSPROP, K_ADD_SIGN, K_POWER_SIGN
};

/* One optimizer: its variables (var and slots, inputs 0..nvar-1, named for messages) and the rest
 * of its inputs in order: S a scalar of T (named), G the gradient, I the indices (sparse forms
 * only: removed from the dense layout), K an int64 scalar (global_step). */
typedef struct {
  const char *name;
  int kind;
  int nvar;
  const char *vars[4];
  const char *layout; /* the sparse form's; the dense one is this without 'I' */
  const char *scalars[7];
  int real_only;  /* the sign/abs/max/pow ops: no complex form */
  int has_sparse;
  unsigned dense_types, sparse_types; /* the T TensorFlow's CPU registers (TY_*) */
} ta_desc;

static const ta_desc descs[] = {
    {"GradientDescent", K_GD, 1, {"var"}, "SGI", {"alpha"}, 0, 0, TY_ALL, 0},
    {"ProximalGradientDescent", K_PROXIMAL_GD, 1, {"var"}, "SSSGI", {"alpha", "l1", "l2"}, 1, 1, TY_FD, TY_FD},
    {"Adadelta", K_ADADELTA, 3, {"var", "accum", "accum_update"}, "SSSGI", {"lr", "rho", "epsilon"}, 0, 1, TY_ALL, TY_ALL},
    {"Adagrad", K_ADAGRAD, 2, {"var", "accum"}, "SGI", {"lr"}, 0, 1, TY_ALL, TY_ALL},
    {"AdagradV2", K_ADAGRADV2, 2, {"var", "accum"}, "SSGI", {"lr", "epsilon"}, 0, 1, TY_ALL, TY_ALL},
    {"ProximalAdagrad", K_PROXIMAL_ADAGRAD, 2, {"var", "accum"}, "SSSGI", {"lr", "l1", "l2"}, 1, 1, TY_FD, TY_FD},
    {"AdagradDA", K_ADAGRAD_DA, 3, {"var", "gradient_accumulator", "gradient_squared_accumulator"}, "GISSSK",
     {"lr", "l1", "l2"}, 1, 1, TY_FD, TY_FD},
    {"Ftrl", K_FTRL, 3, {"var", "accum", "linear"}, "GISSSS", {"lr", "l1", "l2", "lr_power"}, 1, 1, TY_REAL, TY_REAL},
    {"FtrlV2", K_FTRL_V2, 3, {"var", "accum", "linear"}, "GISSSSS", {"lr", "l1", "l2", "l2_shrinkage", "lr_power"}, 1, 1,
     TY_REAL, TY_REAL},
    {"Momentum", K_MOMENTUM, 2, {"var", "accum"}, "SGIS", {"lr", "momentum"}, 0, 1, TY_ALL, TY_ALL},
    {"KerasMomentum", K_KERAS_MOMENTUM, 2, {"var", "accum"}, "SGIS", {"lr", "momentum"}, 0, 1, TY_ALL, TY_ALL},
    {"Adam", K_ADAM, 3, {"var", "m", "v"}, "SSSSSSG", {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"},
     0, 0, TY_ALL, 0},
    {"AdamWithAmsgrad", K_AMSGRAD, 4, {"var", "m", "v", "vhat"}, "SSSSSSG",
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"}, 1, 0, TY_REAL, 0},
    {"AdaMax", K_ADAMAX, 3, {"var", "m", "v"}, "SSSSSG", {"beta1_power", "lr", "beta1", "beta2", "epsilon"}, 1, 0, TY_HALF | TY_FD, 0},
    {"RMSProp", K_RMSPROP, 3, {"var", "ms", "mom"}, "SSSSGI", {"lr", "rho", "momentum", "epsilon"}, 0, 1, TY_ALL, TY_ALL & ~TY_BF16},
    {"CenteredRMSProp", K_CENTERED_RMSPROP, 4, {"var", "mg", "ms", "mom"}, "SSSSGI",
     {"lr", "rho", "momentum", "epsilon"}, 0, 1, TY_ALL, TY_ALL & ~TY_BF16},
    {"AddSign", K_ADD_SIGN, 2, {"var", "m"}, "SSSSG", {"lr", "alpha", "sign_decay", "beta"}, 1, 0, TY_REAL, 0},
    {"PowerSign", K_POWER_SIGN, 2, {"var", "m"}, "SSSSG", {"lr", "logbase", "sign_decay", "beta"}, 1, 0, TY_REAL, 0},
};
#define NDESCS ((int)(sizeof descs / sizeof descs[0]))

typedef struct {
  const ta_desc *d;
  int kind, sparse, ref, dtype;
  int nesterov, update_slots, mul_lr;
  char op[48];
  int grad_in, idx_in, step_in; /* input positions (-1: none) */
  int scalar_in[7];
  int nscalars;
} ta_state;

#define TA_T float
#define TA_SFX f32
#define TA_REAL 1
#include "ops/train_apply_impl.h"
#undef TA_T
#undef TA_SFX
#undef TA_REAL
#define TA_T double
#define TA_SFX f64
#define TA_REAL 1
#include "ops/train_apply_impl.h"
#undef TA_T
#undef TA_SFX
#undef TA_REAL
#define TA_T float complex
#define TA_SFX c64
#define TA_REAL 0
#include "ops/train_apply_impl.h"
#undef TA_T
#undef TA_SFX
#undef TA_REAL
#define TA_T double complex
#define TA_SFX c128
#define TA_REAL 0
#include "ops/train_apply_impl.h"
#undef TA_T
#undef TA_SFX
#undef TA_REAL

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

static int same_shape(const sm_tensor *a, const sm_tensor *b) {
  int r = sm_tensor_rank(a);
  return r == sm_tensor_rank(b) &&
         (r == 0 || !memcmp(sm_tensor_dims(a), sm_tensor_dims(b), (size_t)r * sizeof(int64_t)));
}

static sm_status *ta_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int ref = strncmp(op, "Resource", 8) != 0;
  const char *p = ref ? op : op + 8;
  int sparse = !strncmp(p, "Sparse", 6);
  if (sparse) p += 6;
  if (strncmp(p, "Apply", 5)) return sm_status_new(SM_INTERNAL, "%s is not an optimizer op", op);
  p += 5;
  const ta_desc *d = NULL;
  for (int i = 0; i < NDESCS && !d; i++)
    if (!strcmp(descs[i].name, p) && (!sparse || descs[i].has_sparse)) d = &descs[i];
  if (!d) return sm_status_new(SM_INTERNAL, "%s is not an optimizer op", op);
  ta_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->d = d, st->kind = d->kind, st->sparse = sparse, st->ref = ref;
  snprintf(st->op, sizeof st->op, "%s", op);
  st->update_slots = 1;
  sm_status *s = sm__node_attr_type(node, "T", &st->dtype);
  if (!s && sm__node_attr(node, "use_nesterov")) s = sm__node_attr_bool(node, "use_nesterov", &st->nesterov);
  if (!s && sm__node_attr(node, "update_slots")) s = sm__node_attr_bool(node, "update_slots", &st->update_slots);
  if (!s && sm__node_attr(node, "multiply_linear_by_lr"))
    s = sm__node_attr_bool(node, "multiply_linear_by_lr", &st->mul_lr);
  if (!s) {
    int dt = st->dtype;
    unsigned have = sparse ? d->sparse_types : d->dense_types;
    unsigned ty = dt == SM_HALF ? TY_HALF : dt == SM_BFLOAT16 ? TY_BF16 : dt == SM_FLOAT ? TY_F32 : dt == SM_DOUBLE ? TY_F64
                  : dt == SM_COMPLEX64 || dt == SM_COMPLEX128 ? TY_CPLX : 0;
    if (!(have & ty))
      s = sm_status_new(SM_UNIMPLEMENTED, "%s has no kernel for T=%s (TensorFlow's CPU registers none)", op, dname(dt));
  }
  st->grad_in = st->idx_in = st->step_in = -1;
  int in = d->nvar;
  for (const char *l = d->layout; !s && *l; l++) {
    if (*l == 'I' && !sparse) continue;
    if (*l == 'S') st->scalar_in[st->nscalars++] = in;
    if (*l == 'G') st->grad_in = in;
    if (*l == 'I') st->idx_in = in;
    if (*l == 'K') st->step_in = in;
    in++;
  }
  if (!s && sm__node_num_inputs(node) < in)
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s takes %d inputs, the node has %d", op, in, sm__node_num_inputs(node));
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* The variables of one update, locked in address order; their values and working copies. */
typedef struct {
  int n;
  sm_variable *v[4];
  sm_variable *order[4]; /* distinct, sorted */
  int nlocked;
  sm_tensor *old[4], *nt[4];
  int owner[4]; /* the input whose copy this input shares (itself, or an earlier input of one variable) */
} ta_vars;

static void vars_release(ta_vars *vs) {
  for (int i = 0; i < vs->n; i++) {
    sm_tensor_free(vs->old[i]);
    if (vs->owner[i] == i) sm_tensor_free(vs->nt[i]);
  }
  for (int i = vs->nlocked - 1; i >= 0; i--) sm__variable_unlock(vs->order[i]);
}

static sm_status *ta_compute(const void *state, sm_kctx *ctx) {
  const ta_state *st = state;
  const ta_desc *d = st->d;
  const char *op = st->op;
  ta_vars vs = {.n = d->nvar};
  char a[96], b[96];
  for (int i = 0; i < d->nvar; i++) {
    sm_status *hs = sm__handle_variable(sm__kctx_input(ctx, i), i, &vs.v[i]);
    if (hs) return sm_status_prefix(hs, "%s (%s)", op, d->vars[i]);
    if (sm__variable_dtype(vs.v[i]) != st->dtype)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: variable %s (%s) has dtype %s, the op's T is %s", op,
                           sm__variable_name(vs.v[i]), d->vars[i], dname(sm__variable_dtype(vs.v[i])),
                           dname(st->dtype));
  }
  /* distinct variables in address order */
  for (int i = 0; i < d->nvar; i++) {
    int dup = 0;
    for (int k = 0; k < vs.nlocked; k++) dup |= vs.order[k] == vs.v[i];
    if (dup) continue;
    int k = vs.nlocked++;
    while (k > 0 && (uintptr_t)vs.order[k - 1] > (uintptr_t)vs.v[i]) {
      vs.order[k] = vs.order[k - 1];
      k--;
    }
    vs.order[k] = vs.v[i];
  }
  for (int i = 0; i < vs.nlocked; i++) sm__variable_lock(vs.order[i]);
  sm_status *s = NULL;
  for (int i = 0; i < d->nvar && !s; i++) {
    vs.owner[i] = i;
    for (int k = 0; k < i; k++)
      if (vs.v[k] == vs.v[i]) {
        vs.owner[i] = k;
        break;
      }
    sm_status *rs = sm__variable_read(vs.v[i], &vs.old[i]);
    if (rs) {
      s = sm_status_new(SM_FAILED_PRECONDITION, "%s: Attempting to use uninitialized variables: %s (%s)", op,
                        sm__variable_name(vs.v[i]), d->vars[i]);
      sm_status_free(rs);
    }
  }
  const sm_tensor *var = vs.old[0];
  for (int i = 1; i < d->nvar && !s; i++)
    if (!same_shape(var, vs.old[i]))
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: var and %s do not have the same shape%s %s", op, d->vars[i],
                        sm__array_shape_str(var, a, sizeof a), sm__array_shape_str(vs.old[i], b, sizeof b));
  for (int k = 0; k < st->nscalars && !s; k++) {
    const sm_tensor *t = sm__kctx_input(ctx, st->scalar_in[k]);
    if (sm_tensor_rank(t) != 0)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: %s is not a scalar: %s", op, d->scalars[k], sm__array_shape_str(t, a, sizeof a));
    else if (sm_tensor_dtype(t) != st->dtype)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: %s has dtype %s, T is %s", op, d->scalars[k],
                        dname(sm_tensor_dtype(t)), dname(st->dtype));
  }
  int64_t step = 0;
  if (!s && st->step_in >= 0) {
    const sm_tensor *t = sm__kctx_input(ctx, st->step_in);
    if (sm_tensor_rank(t) != 0 || sm_tensor_dtype(t) != SM_INT64)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: global_step is not a scalar: %s", op, sm__array_shape_str(t, a, sizeof a));
    else
      step = *(const int64_t *)sm_tensor_data(t);
  }
  const sm_tensor *grad = sm__kctx_input(ctx, st->grad_in);
  if (!s && sm_tensor_dtype(grad) != st->dtype)
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: grad has dtype %s, T is %s", op, dname(sm_tensor_dtype(grad)),
                      dname(st->dtype));
  int64_t nrows = 1, inner = s ? 0 : sm_tensor_num_elements(var);
  int64_t *rows = NULL;
  if (!s && !st->sparse) {
    if (!same_shape(var, grad))
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: var and %s do not have the same shape%s %s", op,
                        d->kind == K_GD || d->kind == K_PROXIMAL_GD ? "delta" : "grad", sm__array_shape_str(var, a, sizeof a),
                        sm__array_shape_str(grad, b, sizeof b));
  } else if (!s) {
    const sm_tensor *idx = sm__kctx_input(ctx, st->idx_in);
    int it = sm_tensor_dtype(idx);
    if (it != SM_INT32 && it != SM_INT64)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: indices must be int32 or int64, got %s", op, dname(it));
    else if (sm_tensor_rank(var) < 1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: var must be at least 1 dimensional", op);
    else if (sm_tensor_rank(idx) != 1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: indices must be one-dimensional", op);
    else if (sm_tensor_rank(grad) != sm_tensor_rank(var))
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: var and grad must have the same rank (var %s, grad %s)", op,
                        sm__array_shape_str(var, a, sizeof a), sm__array_shape_str(grad, b, sizeof b));
    for (int k = 1; !s && k < sm_tensor_rank(var); k++)
      if (sm_tensor_dims(var)[k] != sm_tensor_dims(grad)[k])
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: var and grad must match in dimension %d", op, k);
    if (!s) {
      nrows = sm_tensor_dims(idx)[0];
      if (sm_tensor_dims(grad)[0] != nrows)
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: grad must be the same size as indices in the first dimension.", op);
      int64_t first = sm_tensor_dims(var)[0];
      inner = first ? sm_tensor_num_elements(var) / first : 0;
      if (!s && nrows > 0 && inner == 0 && d->kind == K_PROXIMAL_GD)
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: Inner dimension should be greater than zero.", op);
      if (!s && nrows > 0) rows = sm__kctx_scratch(ctx, (size_t)nrows * sizeof *rows, &s);
      for (int64_t r = 0; !s && r < nrows; r++) {
        int64_t k = it == SM_INT32 ? ((const int32_t *)sm_tensor_data(idx))[r] : ((const int64_t *)sm_tensor_data(idx))[r];
        if (k < 0 || k >= first)
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: Index %lld at offset %lld in indices is out of range", op,
                            (long long)k, (long long)r);
        else
          rows[r] = k;
      }
    }
  }
  /* working copies */
  int dt = st->dtype, f16 = sm__math_is_f16(dt);
  int64_t n = s ? 0 : sm_tensor_num_elements(var);
  void *work[4] = {0};
  for (int i = 0; i < d->nvar && !s; i++) {
    if (vs.owner[i] != i) {
      vs.nt[i] = vs.nt[vs.owner[i]];
      work[i] = work[vs.owner[i]];
      continue;
    }
    s = sm_tensor_new(dt, sm_tensor_rank(var), sm_tensor_dims(var), &vs.nt[i]);
    if (s) break;
    if (f16) {
      work[i] = sm__kctx_scratch(ctx, (size_t)(n ? n : 1) * sizeof(float), &s);
      if (!s) sm__math_to_f32(dt, sm_tensor_data(vs.old[i]), work[i], n);
    } else {
      memcpy(sm_tensor_data(vs.nt[i]), sm_tensor_data(vs.old[i]), (size_t)n * sm_dtype_size(dt));
      work[i] = sm_tensor_data(vs.nt[i]);
    }
  }
  const void *g = s ? NULL : sm_tensor_data(grad);
  int64_t gn = s ? 0 : sm_tensor_num_elements(grad);
  if (!s && f16) {
    float *gf = sm__kctx_scratch(ctx, (size_t)(gn ? gn : 1) * sizeof(float), &s);
    if (gf) sm__math_to_f32(dt, g, gf, gn);
    g = gf;
  }
  if (!s) {
    union {
      float f[7];
      double d[7];
      float complex cf[7];
      double complex cd[7];
    } c;
    memset(&c, 0, sizeof c);
    for (int k = 0; k < st->nscalars; k++) {
      const void *p = sm_tensor_data(sm__kctx_input(ctx, st->scalar_in[k]));
      switch (dt) {
        case SM_FLOAT: c.f[k] = *(const float *)p; break;
        case SM_HALF: case SM_BFLOAT16: sm__math_to_f32(dt, p, &c.f[k], 1); break;
        case SM_DOUBLE: c.d[k] = *(const double *)p; break;
        case SM_COMPLEX64: memcpy(&c.cf[k], p, sizeof c.cf[k]); break;
        default: memcpy(&c.cd[k], p, sizeof c.cd[k]); break;
      }
    }
    if (!st->sparse) nrows = 1, inner = n;
    switch (dt) {
      case SM_FLOAT: case SM_HALF: case SM_BFLOAT16:
        ta_run_f32(st, (float *const *)work, g, c.f, step, nrows, inner, rows);
        break;
      case SM_DOUBLE: ta_run_f64(st, (double *const *)work, g, c.d, step, nrows, inner, rows); break;
      case SM_COMPLEX64: ta_run_c64(st, (float complex *const *)work, g, c.cf, step, nrows, inner, rows); break;
      default: ta_run_c128(st, (double complex *const *)work, g, c.cd, step, nrows, inner, rows); break;
    }
    for (int i = 0; i < d->nvar; i++) {
      if (vs.owner[i] != i) continue;
      if (f16) sm__math_from_f32(dt, work[i], sm_tensor_data(vs.nt[i]), n);
    }
    for (int i = 0; i < d->nvar && !s; i++) {
      if (vs.owner[i] != i) continue;
      s = sm__variable_assign(vs.v[i], vs.nt[i]);
      vs.nt[i] = NULL;
    }
  }
  vars_release(&vs);
  if (!s && st->ref) sm__kctx_forward(ctx, 0, 0);
  return s;
}

#define TA_K(name) {name, ta_prepare, ta_compute, free, 0}
#define TA_OPS(name) TA_K("Apply" name), TA_K("ResourceApply" name)
#define TA_SPARSE_OPS(name) TA_K("SparseApply" name), TA_K("ResourceSparseApply" name)

/* Every form TensorFlow defines (KerasMomentum and AdamWithAmsgrad have resource forms only). */
const sm_kernel sm_kernels_train_apply[] = {
    TA_OPS("GradientDescent"), TA_OPS("ProximalGradientDescent"), TA_SPARSE_OPS("ProximalGradientDescent"),
    TA_OPS("Adadelta"), TA_SPARSE_OPS("Adadelta"), TA_OPS("Adagrad"), TA_SPARSE_OPS("Adagrad"),
    TA_OPS("AdagradV2"), TA_SPARSE_OPS("AdagradV2"), TA_OPS("ProximalAdagrad"), TA_SPARSE_OPS("ProximalAdagrad"),
    TA_OPS("AdagradDA"), TA_SPARSE_OPS("AdagradDA"), TA_OPS("Ftrl"), TA_SPARSE_OPS("Ftrl"), TA_OPS("FtrlV2"),
    TA_SPARSE_OPS("FtrlV2"), TA_OPS("Momentum"), TA_SPARSE_OPS("Momentum"), TA_K("ResourceApplyKerasMomentum"),
    TA_K("ResourceSparseApplyKerasMomentum"), TA_OPS("Adam"), TA_K("ResourceApplyAdamWithAmsgrad"), TA_OPS("AdaMax"),
    TA_OPS("RMSProp"), TA_SPARSE_OPS("RMSProp"), TA_OPS("CenteredRMSProp"), TA_SPARSE_OPS("CenteredRMSProp"),
    TA_OPS("AddSign"), TA_OPS("PowerSign"), {0},
};
