/* accum.c - TF1's gradient accumulators and temporary variables: ConditionalAccumulator,
 * SparseConditionalAccumulator (ref handles) and ResourceConditionalAccumulator; Accumulator*,
 * SparseAccumulator* and ResourceAccumulator* ApplyGradient / NumAccumulated / SetGlobalStep /
 * TakeGradient; TemporaryVariable and DestroyTemporaryVariable.
 *
 * An accumulator is an object of the model's resources (kind SM_RES_ACCUM) keyed by (container,
 * shared_name) as queue.c keys its queues (no shared_name: one per node), so one run applies
 * gradients and a later one takes their average. As TF's (conditional_accumulator_base.cc): a
 * gradient whose local_step is below the accumulator's global step is dropped silently (before
 * any check); others are checked against the shape attr and the gradients already summed, and
 * summed (sparse: TF's merge walk over the summed and the new indices, one count per row);
 * TakeGradient waits until num_required gradients are in (another run's apply wakes it; the run's
 * deadline or cancel flag ends the wait, checked every 10 ms), gives the sum (reduction_type SUM)
 * or the mean (MEAN: dense by the count, sparse row by row by each row's count), then resets the
 * sum and the count and adds one to the global step. SetGlobalStep sets it, smaller or not. dtypes:
 * half, float, double (TF's CPU kernels). What the sum holds is charged to the run that applies.
 *
 * TemporaryVariable: TF keeps one in the step's own container until DestroyTemporaryVariable
 * returns its value. Here it is a variable of the model's resources under container
 * "_sm_temporary" named by var_name (or the node), set to zeros of its shape each time the op runs
 * (TF leaves it uninitialized); Destroy gives its value and empties it. Two concurrent runs of one
 * graph therefore share it (TF gives each step its own). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_internal.h"
#include "math_int.h"
#include "runtime/kernel.h"
#include "state_internal.h"

#define ACCUM_MAGIC 0x41434355u

typedef struct accum {
  uint32_t magic;
  int sparse;
  int dtype;
  int mean;
  int rank; /* the shape attr; -1 unknown */
  int64_t dims[SM_MAX_RANK];
  char *name;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t counter;
  int64_t global_step;
  sm_tensor *grad; /* dense: the sum; sparse: the summed rows [nnz, ...] */
  int64_t *idx;    /* sparse: the rows' indices and counts */
  int *cnt;
  int64_t nnz;
  sm_mem_account acct;
} accum;

typedef struct aspec {
  sm__state_key key; /* first: sm__state_spec_release */
  int sparse, dtype, mean, rank;
  int64_t dims[SM_MAX_RANK];
} aspec;

static const char *accum_kind(const accum *a) { return a->sparse ? "SparseConditionalAccumulator" : "ConditionalAccumulator"; }

static void accum_reset(accum *a) {
  sm__mem_give_tensor(&a->acct, a->grad);
  sm_tensor_free(a->grad);
  a->grad = NULL;
  sm__mem_give(&a->acct, (size_t)a->nnz * (sizeof(int64_t) + sizeof(int)));
  free(a->idx);
  free(a->cnt);
  a->idx = NULL;
  a->cnt = NULL;
  a->nnz = 0;
  a->counter = 0;
}

static void accum_destroy(void *obj) {
  accum *a = obj;
  if (!a) return;
  accum_reset(a);
  sm__mem_close(&a->acct);
  sm__state_free(a, a->name, &a->mu, &a->cv);
}

static sm_status *accum_make(void *arg, const char *dname, void **obj) {
  const aspec *sp = arg;
  accum *a = sm__state_alloc(sizeof *a, ACCUM_MAGIC, offsetof(accum, name), dname);
  if (!a) return sm_status_new(SM_NO_MEMORY, "accumulator '%s': out of memory", dname);
  a->sparse = sp->sparse;
  a->dtype = sp->dtype;
  a->mean = sp->mean;
  a->rank = sp->rank;
  memcpy(a->dims, sp->dims, sizeof a->dims);
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  *obj = a;
  return NULL;
}

/* ---- the handle ops ----------------------------------------------------------------------------- */

static int accum_dtype_ok(int dt) { return dt == SM_HALF || dt == SM_FLOAT || dt == SM_DOUBLE; }

static sm_status *accum_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  aspec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sp->sparse = !strcmp(op, "SparseConditionalAccumulator");
  sp->mean = 1;
  sm_status *s = sm__node_attr_type(node, "dtype", &sp->dtype);
  if (!s && !accum_dtype_ok(sp->dtype))
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: dtype %s is not one TensorFlow's CPU kernel registers (half, float, double)",
                      op, sm__array_dtype_str(sp->dtype));
  sp->rank = -1;
  if (!s && sm__node_attr(node, "shape")) s = sm__node_attr_shape(node, "shape", &sp->rank, sp->dims);
  if (!s && sm__node_attr(node, "reduction_type")) {
    const char *rt;
    size_t len;
    if (!(s = sm__node_attr_string(node, "reduction_type", &rt, &len))) {
      if (len == 3 && !memcmp(rt, "SUM", 3))
        sp->mean = 0;
      else if (!(len == 4 && !memcmp(rt, "MEAN", 4)))
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: reduction_type '%.*s' is not MEAN or SUM", op, (int)(len > 64 ? 64 : len), rt);
    }
  }
  if (!s) s = sm__state_names(node, &sp->key.container, &sp->key.name);
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *accum_handle_compute(const void *state, sm_kctx *ctx) {
  const aspec *sp = state;
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_ACCUM, &sp->key, accum_make, (void *)sp, accum_destroy, &obj);
  if (s) return s;
  accum *a = obj;
  if (a->sparse != sp->sparse || a->dtype != sp->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "accumulator '%s' exists as a %s of %s", a->name, accum_kind(a),
                         sm__array_dtype_str(a->dtype));
  return sm__state_output(ctx, a);
}

/* ---- shared by the users ------------------------------------------------------------------------ */

static sm_status *input_accum(sm_kctx *ctx, int sparse, accum **out) {
  void *o;
  *out = NULL;
  sm_status *s = sm__state_of(sm__kctx_input(ctx, 0), ACCUM_MAGIC, NULL, "an accumulator", &o);
  if (s) return s;
  accum *a = o;
  if (sparse >= 0 && a->sparse != sparse)
    return sm_status_new(SM_INVALID_ARGUMENT, "accumulator '%s' is a %s, not a %s", a->name, accum_kind(a),
                         sparse ? "SparseConditionalAccumulator" : "ConditionalAccumulator");
  *out = a;
  return NULL;
}

static sm_status *int_scalar(const sm_tensor *t, int dtype, const char *what, int64_t *v) {
  char b[96];
  if (sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Argument %s must be scalar, but had bad shape %s", what, sm__array_shape_str(t, b, sizeof b));
  if (sm_tensor_dtype(t) != dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "Argument %s must be %s, not %s", what, sm__array_dtype_str(dtype),
                         sm__array_dtype_str(sm_tensor_dtype(t)));
  *v = sm__array_int_at(t, 0);
  return NULL;
}

static sm_status *dtype_check(const accum *a, const sm_tensor *t) {
  if (sm_tensor_dtype(t) != a->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s '%s' holds %s gradients, got %s", accum_kind(a), a->name,
                         sm__array_dtype_str(a->dtype), sm__array_dtype_str(sm_tensor_dtype(t)));
  return NULL;
}

/* dst[i] += src[i] (half: each sum rounded, as Eigen's half) */
static void add_into(int dt, void *dst, const void *src, int64_t n) {
  if (dt == SM_FLOAT) {
    float *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else if (dt == SM_DOUBLE) {
    double *d = dst;
    const double *s = src;
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else {
    uint16_t *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) {
      float x, y;
      sm__math_to_f32(dt, d + i, &x, 1);
      sm__math_to_f32(dt, s + i, &y, 1);
      x += y;
      sm__math_from_f32(dt, &x, d + i, 1);
    }
  }
}

/* p[i] /= by (by converted to the dtype first, as TF's TypeConverter) */
static void div_by(int dt, void *p, int64_t n, int64_t by) {
  if (dt == SM_FLOAT) {
    float *d = p, b = (float)by;
    for (int64_t i = 0; i < n; i++) d[i] /= b;
  } else if (dt == SM_DOUBLE) {
    double *d = p, b = (double)by;
    for (int64_t i = 0; i < n; i++) d[i] /= b;
  } else {
    uint16_t *d = p, hb;
    float b = (float)by;
    sm__math_from_f32(dt, &b, &hb, 1);
    sm__math_to_f32(dt, &hb, &b, 1);
    for (int64_t i = 0; i < n; i++) {
      float x;
      sm__math_to_f32(dt, d + i, &x, 1);
      x /= b;
      sm__math_from_f32(dt, &x, d + i, 1);
    }
  }
}

/* ---- dense: AccumulatorApplyGradient ------------------------------------------------------------- */

static sm_status *dense_shape_check(const accum *a, const sm_tensor *g) {
  char e[160], b[160];
  int rank = sm_tensor_rank(g);
  const int64_t *dims = sm_tensor_dims(g);
  if (a->counter > 0 && a->grad) {
    int same = sm_tensor_rank(a->grad) == rank;
    for (int d = 0; same && d < rank; d++) same = sm_tensor_dims(a->grad)[d] == dims[d];
    if (!same)
      return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected %s, got %s", sm__array_shape_str(a->grad, e, sizeof e),
                           sm__array_shape_str(g, b, sizeof b));
  }
  if (a->rank >= 0) {
    int ok = a->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = a->dims[d] < 0 || a->dims[d] == dims[d];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected %s, got %s",
                           sm__array_partial_shape_str(a->rank, a->dims, e, sizeof e), sm__array_shape_str(g, b, sizeof b));
  }
  return NULL;
}

static sm_status *apply_dense_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  accum *a;
  int64_t step;
  sm_status *s = input_accum(ctx, 0, &a);
  if (!s) s = int_scalar(sm__kctx_input(ctx, 1), SM_INT64, "local_step", &step);
  const sm_tensor *g = sm__kctx_input(ctx, 2);
  if (!s) s = dtype_check(a, g);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  if (step >= a->global_step && !(s = dense_shape_check(a, g))) {
    if (a->counter > 0 && a->grad) {
      add_into(a->dtype, sm_tensor_data(a->grad), sm_tensor_data(g), sm_tensor_num_elements(g));
    } else {
      sm_tensor *c = NULL;
      s = sm__kctx_hold_tensor(ctx, &a->acct, g, "an accumulator's gradient");
      if (!s && (s = sm_tensor_copy(g, &c))) sm__mem_give_tensor(&a->acct, g);
      if (!s) a->grad = c;
    }
    if (!s) {
      a->counter++;
      pthread_cond_broadcast(&a->cv);
    }
  }
  pthread_mutex_unlock(&a->mu);
  return s;
}

/* ---- sparse: SparseAccumulatorApplyGradient ----------------------------------------------------- */

static sm_status *sparse_shape_check(const accum *a, const sm_tensor *idx, const sm_tensor *val, const sm_tensor *shp,
                                     int known) {
  int vr = sm_tensor_rank(val);
  const int64_t *vd = sm_tensor_dims(val);
  if (known && a->rank >= 0) {
    int64_t n = sm_tensor_num_elements(shp);
    if (a->rank > n)
      return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected shape rank at least %d, got %lld", a->rank, (long long)n);
    for (int i = 0; i < a->rank; i++) {
      int64_t v = sm__array_int_at(shp, i);
      if (a->dims[i] != -1 && a->dims[i] != v)
        return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected shape dim %d to be %lld, got %lld", i,
                             (long long)a->dims[i], (long long)v);
    }
  }
  if (a->rank > 0 && a->dims[0] != -1 && sm_tensor_rank(idx) > 0) {
    for (int64_t i = 0; i < sm_tensor_dims(idx)[0]; i++) {
      int64_t v = sm__array_int_at(idx, i);
      if (v >= a->dims[0])
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Shape mismatch: index of slice %lld exceeded limits of shape; index is %lld exceeded %lld",
                             (long long)i, (long long)v, (long long)a->dims[0]);
    }
  }
  if (a->counter > 0 && a->grad) {
    int ar = sm_tensor_rank(a->grad);
    if (ar != vr) return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected values rank %d, got %d", ar, vr);
    for (int i = 1; i < ar; i++)
      if (sm_tensor_dims(a->grad)[i] != vd[i])
        return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected values dim %d to be %lld, got %lld", i,
                             (long long)sm_tensor_dims(a->grad)[i], (long long)vd[i]);
  } else if (a->rank >= 0) {
    if (a->rank > vr) return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected values rank at least %d, got %d", a->rank, vr);
    for (int i = 1; i < a->rank; i++)
      if (a->dims[i] != -1 && a->dims[i] != vd[i])
        return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch: expected values dim %d to be %lld, got %lld", i,
                             (long long)a->dims[i], (long long)vd[i]);
  }
  return NULL;
}

/* The sum of the held rows and g's (TF's merge walk: equal indices summed, a count each). */
static sm_status *sparse_merge(accum *a, sm_kctx *ctx, const sm_tensor *gi, const sm_tensor *gv) {
  int64_t an = a->nnz, gn = sm_tensor_dims(gi)[0], cols = gn ? sm_tensor_num_elements(gv) / gn : 0;
  if (a->grad && sm_tensor_dims(a->grad)[0]) cols = sm_tensor_num_elements(a->grad) / sm_tensor_dims(a->grad)[0];
  size_t es = sm_dtype_size(a->dtype);
  int64_t cap = an + gn;
  int64_t *idx = malloc((size_t)(cap ? cap : 1) * sizeof *idx);
  int *cnt = malloc((size_t)(cap ? cap : 1) * sizeof *cnt);
  sm_status *s = NULL;
  if (!idx || !cnt) s = sm_status_new(SM_NO_MEMORY, "%s '%s': out of memory", accum_kind(a), a->name);
  /* first pass: the merged count */
  int64_t i = 0, j = 0, n = 0;
  while (!s && (i < an || j < gn)) {
    int64_t gk = j < gn ? sm__array_int_at(gi, j) : 0;
    if (i < an && j < gn && a->idx[i] == gk) {
      idx[n] = gk;
      cnt[n++] = a->cnt[i++] + 1;
      j++;
    } else if (i < an && (j >= gn || a->idx[i] < gk)) {
      idx[n] = a->idx[i];
      cnt[n++] = a->cnt[i++];
    } else {
      idx[n] = gk;
      cnt[n++] = 1;
      j++;
    }
  }
  int64_t dims[SM_MAX_RANK];
  int vr = sm_tensor_rank(gv);
  memcpy(dims, sm_tensor_dims(gv), (size_t)vr * sizeof *dims);
  dims[0] = n;
  sm_tensor *sum = NULL;
  if (!s) s = sm_tensor_new(a->dtype, vr, dims, &sum);
  if (!s) s = sm__kctx_hold_tensor(ctx, &a->acct, sum, "an accumulator's gradient");
  if (!s && (s = sm__kctx_hold(ctx, &a->acct, (size_t)n * (sizeof(int64_t) + sizeof(int)), "an accumulator's indices")))
    sm__mem_give_tensor(&a->acct, sum);
  if (s) {
    free(idx);
    free(cnt);
    sm_tensor_free(sum);
    return s;
  }
  char *o = sm_tensor_data(sum);
  const char *av = a->grad ? sm_tensor_data(a->grad) : NULL, *gvd = sm_tensor_data(gv);
  size_t row = (size_t)cols * es;
  i = j = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t gk = j < gn ? sm__array_int_at(gi, j) : 0;
    if (i < an && j < gn && a->idx[i] == gk) {
      memcpy(o + (size_t)k * row, av + (size_t)i * row, row);
      add_into(a->dtype, o + (size_t)k * row, gvd + (size_t)j * row, cols);
      i++, j++;
    } else if (i < an && (j >= gn || a->idx[i] < gk)) {
      memcpy(o + (size_t)k * row, av + (size_t)i * row, row);
      i++;
    } else {
      memcpy(o + (size_t)k * row, gvd + (size_t)j * row, row);
      j++;
    }
  }
  int64_t keep = a->counter;
  accum_reset(a);
  a->counter = keep;
  a->grad = sum;
  a->idx = idx;
  a->cnt = cnt;
  a->nnz = n;
  return NULL;
}

typedef struct {
  int known;
} sparse_apply_state;

static sm_status *sparse_apply_prepare(const sm_node *node, void **state) {
  sparse_apply_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_bool(node, "has_known_shape", &st->known);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *apply_sparse_compute(const void *state, sm_kctx *ctx) {
  const sparse_apply_state *st = state;
  accum *a;
  int64_t step;
  char b[96];
  sm_status *s = input_accum(ctx, 1, &a);
  if (!s) s = int_scalar(sm__kctx_input(ctx, 1), SM_INT64, "local_step", &step);
  const sm_tensor *gi = sm__kctx_input(ctx, 2), *gv = sm__kctx_input(ctx, 3), *gs = sm__kctx_input(ctx, 4);
  if (!s) s = dtype_check(a, gv);
  if (!s && (sm_tensor_dtype(gi) != SM_INT64 || sm_tensor_dtype(gs) != SM_INT64))
    s = sm_status_new(SM_INVALID_ARGUMENT, "gradient_indices and gradient_shape must be int64");
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  if (step >= a->global_step) {
    if (sm_tensor_rank(gi) != 1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "Input indices should be vector but received shape: %s", sm__array_shape_str(gi, b, sizeof b));
    else if (sm_tensor_rank(gv) < 1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "Values cannot be 0-dimensional.");
    else if (sm_tensor_dims(gv)[0] != sm_tensor_dims(gi)[0])
      s = sm_status_new(SM_INVALID_ARGUMENT, "Expected %lld non-empty input values, got %lld", (long long)sm_tensor_dims(gi)[0],
                        (long long)sm_tensor_dims(gv)[0]);
    else if (st->known && sm_tensor_rank(gs) != 1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "gradient_shape must be a vector, got %s", sm__array_shape_str(gs, b, sizeof b));
    if (!s) s = sparse_shape_check(a, gi, gv, gs, st->known);
    if (!s) s = sparse_merge(a, ctx, gi, gv);
    if (!s) {
      a->counter++;
      pthread_cond_broadcast(&a->cv);
    }
  }
  pthread_mutex_unlock(&a->mu);
  return s;
}

/* ---- NumAccumulated / SetGlobalStep (both kinds) ------------------------------------------------- */

static sm_status *num_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  accum *a;
  sm_tensor *out;
  sm_status *s = input_accum(ctx, -1, &a);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  ((int32_t *)sm_tensor_data(out))[0] = (int32_t)a->counter;
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

static sm_status *set_step_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  accum *a;
  int64_t step;
  sm_status *s = input_accum(ctx, -1, &a);
  if (!s) s = int_scalar(sm__kctx_input(ctx, 1), SM_INT64, "new_global_step", &step);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  a->global_step = step; /* TF only logs a warning when it goes down */
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* ---- TakeGradient ---------------------------------------------------------------------------------- */

/* Waits (a->mu held) for num_required gradients. */
static sm_status *wait_for(accum *a, sm_kctx *ctx, int64_t want) {
  sm_status *s = NULL;
  while (a->counter < want)
    if ((s = sm__state_wait(&a->cv, &a->mu, ctx))) break;
  return s;
}

static sm_status *take_args(sm_kctx *ctx, int sparse, accum **a, int64_t *want) {
  sm_status *s = input_accum(ctx, sparse, a);
  if (!s) s = int_scalar(sm__kctx_input(ctx, 1), SM_INT32, "num_required", want);
  if (!s && *want < 1) s = sm_status_new(SM_INVALID_ARGUMENT, "Argument num_required must be positive, but was %lld", (long long)*want);
  return s;
}

static sm_status *take_dense_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  accum *a;
  int64_t want;
  sm_status *s = take_args(ctx, 0, &a, &want);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  if (!(s = wait_for(a, ctx, want))) {
    sm_tensor *g = a->grad;
    if (a->mean) div_by(a->dtype, sm_tensor_data(g), sm_tensor_num_elements(g), a->counter);
    sm__mem_give_tensor(&a->acct, g);
    a->grad = NULL;
    sm__kctx_set_output(ctx, 0, g);
    accum_reset(a);
    a->global_step++;
  }
  pthread_mutex_unlock(&a->mu);
  return s;
}

static sm_status *take_sparse_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  accum *a;
  int64_t want;
  sm_status *s = take_args(ctx, 1, &a, &want);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  if (!(s = wait_for(a, ctx, want))) {
    sm_tensor *g = a->grad, *ind, *shp;
    int vr = sm_tensor_rank(g);
    int64_t n = a->nnz, r = vr;
    s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, &n, &ind);
    if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &r, &shp);
    if (!s) {
      memcpy(sm_tensor_data(ind), a->idx, (size_t)n * sizeof(int64_t));
      int64_t *sd = sm_tensor_data(shp);
      sd[0] = a->rank > 0 ? a->dims[0] : -1;
      for (int i = 1; i < vr; i++) sd[i] = sm_tensor_dims(g)[i];
      int64_t cols = n ? sm_tensor_num_elements(g) / n : 0;
      size_t row = (size_t)cols * sm_dtype_size(a->dtype);
      if (a->mean)
        for (int64_t k = 0; k < n; k++) div_by(a->dtype, (char *)sm_tensor_data(g) + (size_t)k * row, cols, a->cnt[k]);
      sm__mem_give_tensor(&a->acct, g);
      a->grad = NULL;
      sm__kctx_set_output(ctx, 1, g);
      accum_reset(a);
      a->global_step++;
    }
  }
  pthread_mutex_unlock(&a->mu);
  return s;
}

/* ---- TemporaryVariable / DestroyTemporaryVariable ---------------------------------------------- */

typedef struct {
  int dtype, rank;
  int64_t dims[SM_MAX_RANK];
  size_t bytes;
  char *name;
} tv_state;

static void tv_release(void *p) {
  tv_state *st = p;
  if (!st) return;
  free(st->name);
  free(st);
}

static sm_status *tv_prepare(const sm_node *node, void **state) {
  int destroy = !strcmp(sm__node_op(node), "DestroyTemporaryVariable");
  tv_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  if (!destroy) {
    s = sm__node_attr_type(node, "dtype", &st->dtype);
    if (!s) s = sm__node_attr_shape(node, "shape", &st->rank, st->dims);
    for (int d = 0; !s && d < st->rank; d++)
      if (st->dims[d] < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "TemporaryVariable: shape must be fully defined");
    if (!s && st->rank < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "TemporaryVariable: shape must be fully defined");
    st->bytes = sm_dtype_size(st->dtype);
    for (int d = 0; !s && d < st->rank; d++) {
      if (st->dims[d] && st->bytes > ((size_t)1 << 62) / (size_t)st->dims[d])
        s = sm_status_new(SM_INVALID_ARGUMENT, "TemporaryVariable: shape is too large");
      else
        st->bytes *= (size_t)st->dims[d];
    }
  }
  const char *vn = "";
  size_t len = 0;
  if (!s && sm__node_attr(node, "var_name")) s = sm__node_attr_string(node, "var_name", &vn, &len);
  if (!s && !len && destroy) s = sm_status_new(SM_INVALID_ARGUMENT, "DestroyTemporaryVariable: Missing var_name attribute");
  if (!s && !len) vn = sm__node_name(node), len = strlen(vn); /* TF: the node's name */
  if (!s && !(st->name = malloc(len + 1))) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  if (!s) {
    memcpy(st->name, vn, len);
    st->name[len] = 0;
  }
  if (s) {
    tv_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *tv_compute(const void *state, sm_kctx *ctx) {
  const tv_state *st = state;
  sm_variable *v;
  sm_tensor *z = NULL, *out;
  sm_status *s = sm__resources_variable(sm__kctx_resources(ctx), "_sm_temporary", st->name, st->dtype, &v);
  if (!s) s = sm__kctx_charge_check(ctx, st->bytes, "a temporary variable");
  if (!s) s = sm_tensor_new(st->dtype, st->rank, st->dims, &z);
  if (!s) {
    s = sm__variable_assign(v, z);
    z = NULL;
  }
  sm_tensor_free(z);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_RESOURCE, 0, NULL, &out);
  if (!s) ((void **)sm_tensor_data(out))[0] = v;
  return s;
}

static sm_status *tv_destroy_compute(const void *state, sm_kctx *ctx) {
  const tv_state *st = state;
  const sm_tensor *h = sm__kctx_input(ctx, 0);
  if (!h || sm_tensor_dtype(h) != SM_RESOURCE || sm_tensor_num_elements(h) != 1 || !((void *const *)sm_tensor_data(h))[0] ||
      !sm__is_variable(((void *const *)sm_tensor_data(h))[0]))
    return sm_status_new(SM_INVALID_ARGUMENT, "DestroyTemporaryVariable: input 0 is not a temporary variable");
  sm_variable *v = ((void *const *)sm_tensor_data(h))[0];
  sm_tensor *val = NULL, *empty = NULL;
  int64_t zero = 0;
  sm__variable_lock(v);
  sm_status *s = sm__variable_read(v, &val);
  /* the value goes out; what the variable keeps is an empty tensor, not the value's memory */
  if (!s) s = sm_tensor_new(sm__variable_dtype(v), 1, &zero, &empty);
  if (!s) {
    s = sm__variable_assign(v, empty);
    empty = NULL;
  }
  sm__variable_unlock(v);
  sm_tensor_free(empty);
  (void)st;
  if (s) {
    sm_tensor_free(val);
    return s;
  }
  sm__kctx_set_output(ctx, 0, val);
  return NULL;
}

#define AK(name, prep, comp, rel) {name, prep, comp, rel, 0}
const sm_kernel sm_kernels_accum[] = {
    AK("ConditionalAccumulator", accum_prepare, accum_handle_compute, sm__state_spec_release),
    AK("SparseConditionalAccumulator", accum_prepare, accum_handle_compute, sm__state_spec_release),
    AK("ResourceConditionalAccumulator", accum_prepare, accum_handle_compute, sm__state_spec_release),
    AK("AccumulatorApplyGradient", NULL, apply_dense_compute, NULL),
    AK("ResourceAccumulatorApplyGradient", NULL, apply_dense_compute, NULL),
    AK("SparseAccumulatorApplyGradient", sparse_apply_prepare, apply_sparse_compute, free),
    AK("AccumulatorNumAccumulated", NULL, num_compute, NULL),
    AK("ResourceAccumulatorNumAccumulated", NULL, num_compute, NULL),
    AK("AccumulatorSetGlobalStep", NULL, set_step_compute, NULL),
    AK("ResourceAccumulatorSetGlobalStep", NULL, set_step_compute, NULL),
    AK("AccumulatorTakeGradient", NULL, take_dense_compute, NULL),
    AK("ResourceAccumulatorTakeGradient", NULL, take_dense_compute, NULL),
    AK("SparseAccumulatorTakeGradient", NULL, take_sparse_compute, NULL),
    AK("TemporaryVariable", tv_prepare, tv_compute, tv_release),
    AK("DestroyTemporaryVariable", tv_prepare, tv_destroy_compute, tv_release),
    {NULL, NULL, NULL, NULL, 0},
};
