/* batch_fn.c - BatchFunction (tf.nondifferentiable_batch_function, TF Serving's batching wrapper
 * of a serving function): its function `f` compiled once in prepare as a sub-plan and run on the
 * inputs, as TensorFlow's BatchFunctionKernel does for a request that no other joins within
 * batch_timeout_micros (core/kernels/batching_util/batch_resource_base.cc): the in_tensors'
 * rows padded to the smallest allowed_batch_sizes entry that holds them with copies of their
 * first row, `f` run on them and the captured_tensors, and every output's rows sliced back to the
 * request's. A request larger than max_batch_size is refused as TF does; with
 * enable_large_batch_splitting, max_batch_size bounds a request and the last allowed size the
 * batches `f` runs: a larger request runs in pieces of that many rows (each padded).
 *
 * Requests of concurrent runs are not merged into one batch here: each run computes its own
 * (a row-independent `f` gives the same outputs; the throughput batching buys is the serving
 * layer's business, src/serve batches requests itself). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct {
  sm_plan *f;
  int nin, ncap, nout;
  int64_t max_batch;
  int64_t *allowed;
  size_t nallowed;
  int split;
} bf_state;

static void bf_release(void *p) {
  bf_state *st = p;
  if (!st) return;
  sm__plan_free(st->f);
  free(st->allowed);
  free(st);
}

static sm_status *list_len(const sm_node *node, const char *attr, int *n) {
  const int *v;
  size_t c = 0;
  *n = 0;
  if (!sm__node_attr(node, attr)) return NULL;
  sm_status *s = sm__node_attr_types(node, attr, &v, &c);
  if (!s) *n = (int)c;
  return s;
}

static sm_status *bf_prepare(const sm_node *node, void **state) {
  bf_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = list_len(node, "Tin", &st->nin);
  if (!s) s = list_len(node, "Tcaptured", &st->ncap);
  if (!s) s = list_len(node, "Tout", &st->nout);
  if (!s) s = sm__node_attr_int(node, "max_batch_size", &st->max_batch);
  if (!s && sm__node_attr(node, "enable_large_batch_splitting"))
    s = sm__node_attr_bool(node, "enable_large_batch_splitting", &st->split);
  const int64_t *al = NULL;
  if (!s && sm__node_attr(node, "allowed_batch_sizes")) s = sm__node_attr_ints(node, "allowed_batch_sizes", &al, &st->nallowed);
  if (!s && st->max_batch <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: max_batch_size must be positive, got %lld", (long long)st->max_batch);
  if (!s && st->nallowed) {
    st->allowed = malloc(st->nallowed * sizeof *st->allowed);
    if (!st->allowed) s = sm_status_new(SM_NO_MEMORY, "out of memory");
    for (size_t i = 0; !s && i < st->nallowed; i++) {
      st->allowed[i] = al[i];
      if (al[i] <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "allowed_batch_sizes entries must be positive");
      else if (i && al[i] <= al[i - 1]) s = sm_status_new(SM_INVALID_ARGUMENT, "allowed_batch_sizes entries must be monotonically increasing");
    }
    if (!s && !st->split && st->allowed[st->nallowed - 1] != st->max_batch)
      s = sm_status_new(SM_INVALID_ARGUMENT, "final entry in allowed_batch_sizes must equal max_batch_size when "
                                             "enable_large_batch_splitting is False");
  }
  const Tensorflow__AttrValue *fa = s ? NULL : sm__node_attr(node, "f");
  if (!s && (!fa || fa->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !fa->func || !fa->func->name || !*fa->func->name))
    s = sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: attr 'f' is not a function");
  if (!s) s = sm__prepare_function_plan(node, fa->func->name, &st->f);
  if (!s && (sm__plan_num_feeds(st->f) != st->nin + st->ncap || sm__plan_num_fetches(st->f) != st->nout))
    s = sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: function '%s' takes %d inputs and gives %d outputs; the node passes %d and expects %d",
                      fa->func->name, sm__plan_num_feeds(st->f), sm__plan_num_fetches(st->f), st->nin + st->ncap, st->nout);
  if (s) {
    bf_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* Bytes of one row (dim 0) of t; strings are copied element by element. */
static int64_t row_elems(const sm_tensor *t) {
  int64_t e = 1;
  for (int d = 1; d < sm_tensor_rank(t); d++) e *= sm_tensor_dims(t)[d];
  return e;
}

/* dst rows [dr, dr + n) = src rows [sr, sr + n). */
static sm_status *copy_rows(sm_tensor *dst, int64_t dr, const sm_tensor *src, int64_t sr, int64_t n) {
  int64_t re = row_elems(src);
  if (sm_tensor_dtype(src) == SM_STRING) {
    for (int64_t i = 0; i < n * re; i++) {
      size_t l;
      const char *p = sm_tensor_string(src, sr * re + i, &l);
      sm_status *s = sm_tensor_set_string(dst, dr * re + i, p, l);
      if (s) return s;
    }
    return NULL;
  }
  size_t rb = (size_t)re * sm_dtype_size(sm_tensor_dtype(src));
  if (n && rb) memcpy((char *)sm_tensor_data(dst) + (size_t)dr * rb, (const char *)sm_tensor_data(src) + (size_t)sr * rb, (size_t)n * rb);
  return NULL;
}

/* The smallest allowed size >= n (n itself when none are given). */
static int64_t padded_size(const bf_state *st, int64_t n) {
  for (size_t i = 0; i < st->nallowed; i++)
    if (st->allowed[i] >= n) return st->allowed[i];
  return n;
}

static sm_status *bf_compute(const void *state, sm_kctx *ctx) {
  const bf_state *st = state;
  int nin = st->nin, ntot = st->nin + st->ncap;
  if (sm__kctx_num_inputs(ctx) != ntot) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: expected %d inputs", ntot);
  if (nin == 0) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: no in_tensors to batch");
  int64_t n = -1;
  for (int i = 0; i < nin; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    int dt = sm_tensor_dtype(t);
    if (dt == SM_VARIANT || dt == SM_RESOURCE)
      return sm_status_new(SM_UNIMPLEMENTED, "BatchFunction: batching %s inputs is not supported here", sm_dtype_name(dt));
    if (sm_tensor_rank(t) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Batching input tensors must have at least one dimension");
    if (n >= 0 && sm_tensor_dims(t)[0] != n)
      return sm_status_new(SM_INVALID_ARGUMENT, "Batching input tensors supplied in a given op invocation must have equal 0th-dimension size");
    n = sm_tensor_dims(t)[0];
  }
  if (n > st->max_batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "Task size %lld is larger than maximum input batch size %lld", (long long)n,
                         (long long)st->max_batch);
  if (n == 0) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: a request of 0 rows cannot be batched");
  sm_tensor **args = calloc((size_t)ntot + (size_t)st->nout, sizeof *args);
  sm_tensor **outs = calloc((size_t)st->nout, sizeof *outs);
  sm_status *s = args && outs ? NULL : sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_tensor **res = args ? args + ntot : NULL;
  for (int64_t done = 0; !s && done < n;) {
    /* with splitting, the batches the function runs hold at most the last allowed size */
    int64_t chunk = st->split && st->nallowed ? st->allowed[st->nallowed - 1] : st->max_batch;
    int64_t m = n - done < chunk ? n - done : chunk, p = padded_size(st, m);
    for (int i = 0; !s && i < nin; i++) {
      const sm_tensor *t = sm__kctx_input(ctx, i);
      if (p == n && done == 0) {
        args[i] = (sm_tensor *)t; /* borrowed */
        continue;
      }
      int64_t dims[SM_MAX_RANK];
      memcpy(dims, sm_tensor_dims(t), sizeof(int64_t) * (size_t)sm_tensor_rank(t));
      dims[0] = p;
      s = sm_tensor_new(sm_tensor_dtype(t), sm_tensor_rank(t), dims, &args[i]);
      if (!s) s = copy_rows(args[i], 0, t, done, m);
      for (int64_t r = m; !s && r < p; r++) s = copy_rows(args[i], r, t, done, 1); /* TF pads with the first row */
    }
    for (int i = nin; i < ntot; i++) args[i] = (sm_tensor *)sm__kctx_input(ctx, i);
    if (!s) s = sm__kctx_run_plan(ctx, st->f, args, ntot, res, st->nout);
    for (int o = 0; !s && o < st->nout; o++) {
      const sm_tensor *r = res[o];
      if (sm_tensor_rank(r) < 1) {
        s = sm_status_new(SM_FAILED_PRECONDITION, "Batched output tensor has 0 dimensions");
      } else if (sm_tensor_dims(r)[0] != p) {
        s = sm_status_new(SM_FAILED_PRECONDITION, "Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors");
      } else if (!outs[o]) {
        int64_t dims[SM_MAX_RANK];
        memcpy(dims, sm_tensor_dims(r), sizeof(int64_t) * (size_t)sm_tensor_rank(r));
        dims[0] = n;
        sm_tensor *ot;
        s = sm__kctx_alloc_output_uninit(ctx, o, sm_tensor_dtype(r), sm_tensor_rank(r), dims, &ot);
        if (!s) outs[o] = ot;
      }
      if (!s && (sm_tensor_dtype(r) != sm_tensor_dtype(outs[o]) || sm_tensor_rank(r) != sm_tensor_rank(outs[o]) ||
                 memcmp(sm_tensor_dims(r) + 1, sm_tensor_dims(outs[o]) + 1, sizeof(int64_t) * (size_t)(sm_tensor_rank(r) - 1))))
        s = sm_status_new(SM_FAILED_PRECONDITION, "BatchFunction: output %d of the pieces of a split batch differ in dtype or shape", o);
      if (!s) s = copy_rows(outs[o], done, r, 0, m);
    }
    for (int i = 0; i < nin; i++)
      if (args[i] != sm__kctx_input(ctx, i)) sm_tensor_free(args[i]);
    memset(args, 0, sizeof *args * (size_t)ntot);
    for (int o = 0; o < st->nout; o++) sm_tensor_free(res[o]), res[o] = NULL;
    done += m;
  }
  free(args);
  free(outs);
  return s;
}

const sm_kernel sm_kernels_batch_fn[] = {
    {"BatchFunction", bf_prepare, bf_compute, bf_release, 0},
    {0},
};
