/* control.c - the functional control flow kernel family: While / StatelessWhile, If / StatelessIf,
 * Case / StatelessCase, as tensorflow/core/kernels/functional_ops.cc defines them.
 *
 * Each kernel compiles the functions its attrs name (cond and body; then_branch and else_branch;
 * every entry of branches) once, in prepare, into sub-plans of its own (sm__prepare_function_plan,
 * kernel.h), and runs them from compute with sm__kctx_run_plan: the parent run's resources, thread
 * pool, deadline and cancel flag. Values pass through by reference, whatever their dtype (resource
 * handles, variants, strings): nothing here looks inside a loop-carried tensor.
 *
 * While: cond(vars) -> one tensor, its truth as TensorFlow's ToBool reads it (a scalar: != 0 for
 * numbers, non-empty for a string, a bool as it is, any other dtype an error; any other shape:
 * it has elements); while true, vars = body(vars); the outputs are the last vars. The run's
 * deadline and cancel flag are checked once per iteration besides between the sub-plans' steps,
 * so a loop whose functions have no steps still stops. Per iteration the only allocations are the
 * executor's slot arrays of the two sub-plan runs and the tensors the body makes. A body that
 * projects the items of an input TensorList by a loop-invariant weight (an RNN's x_t @ kernel)
 * has that product done for several steps at once (control_hoist.c; SM_LOOP_HOIST=0 turns it off,
 * for A/B measurements).
 *
 * If: input 0 is the condition (ToBool again), the rest go to then_branch or else_branch.
 * Case: input 0 is an int32 scalar branch index; one out of [0, n) runs the last branch, as
 * TensorFlow does. Keras's maximum_iterations, parallel_iterations and output_shapes need nothing:
 * the first is a loop var cond reads, the others only guide TensorFlow's scheduler and shape
 * inference. */
#include <stdlib.h>
#include <string.h>

#include "ops/control_internal.h"
#include "runtime/kernel.h"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

/* The function a func-valued attr names. */
static sm_status *func_attr(const sm_node *node, const char *attr, const char **name) {
  const Tensorflow__AttrValue *a = sm__node_attr(node, attr);
  if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !a->func || !a->func->name || !*a->func->name)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr '%s' is not a function", attr);
  *name = a->func->name;
  return NULL;
}

/* Compiles function `fname` (what attr `attr` names) and checks it takes nin tensors and gives
 * nout (nout < 0: any number). */
static sm_status *compile(const sm_node *node, const char *attr, const char *fname, int nin, int nout, sm_plan **out) {
  sm_status *st = sm__prepare_function_plan(node, fname, out);
  if (st) return st;
  int fin = sm__plan_num_feeds(*out), fout = sm__plan_num_fetches(*out);
  if (fin != nin || (nout >= 0 && fout != nout)) {
    st = nout >= 0 ? sm_status_new(SM_INVALID_ARGUMENT,
                                   "%s function '%s' takes %d inputs and gives %d outputs; the node passes %d and "
                                   "expects %d",
                                   attr, fname, fin, fout, nin, nout)
                   : sm_status_new(SM_INVALID_ARGUMENT, "%s function '%s' takes %d inputs; the node passes %d", attr,
                                   fname, fin, nin);
    sm__plan_free(*out);
    *out = NULL;
  }
  return st;
}

/* TensorFlow's ToBool (functional_ops.cc): the truth of a predicate tensor. */
static sm_status *to_bool(const sm_tensor *t, int *v) {
  *v = 0;
  if (!t) return sm_status_new(SM_INTERNAL, "no predicate tensor");
  if (sm_tensor_rank(t) != 0) {
    *v = sm_tensor_num_elements(t) > 0;
    return NULL;
  }
  const void *p = sm_tensor_data(t);
  int dt = sm_tensor_dtype(t);
  switch (dt) {
  case SM_FLOAT: *v = *(const float *)p != 0; break;
  case SM_DOUBLE: *v = *(const double *)p != 0; break;
  case SM_INT32: *v = *(const int32_t *)p != 0; break;
  case SM_UINT8: *v = *(const uint8_t *)p != 0; break;
  case SM_INT16: *v = *(const int16_t *)p != 0; break;
  case SM_INT8: *v = *(const int8_t *)p != 0; break;
  case SM_INT64: *v = *(const int64_t *)p != 0; break;
  case SM_BOOL: *v = *(const unsigned char *)p != 0; break;
  case SM_STRING: {
    size_t len = 0;
    if (!sm_tensor_string(t, 0, &len)) return sm_status_new(SM_INTERNAL, "a string predicate without its element");
    *v = len > 0;
    break;
  }
  default: return sm_status_new(SM_INVALID_ARGUMENT, "%s cannot be converted to a boolean", dname(dt));
  }
  return NULL;
}

/* ---- While / StatelessWhile ---------------------------------------------------------------------- */
typedef struct while_state {
  sm_plan *cond, *body;
  sm__hoist *hoist; /* the body's input projection, done for chunks of steps (control_hoist.c); or NULL */
  int n;            /* loop vars */
} while_state;

static void while_release(void *state) {
  while_state *w = state;
  if (!w) return;
  sm__plan_free(w->cond);
  sm__plan_free(w->body);
  sm__hoist_free(w->hoist);
  free(w);
}

static sm_status *while_prepare(const sm_node *node, void **state) {
  *state = NULL;
  int n = sm__node_num_inputs(node);
  if (sm__node_num_outputs(node) != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "%d inputs but %d outputs: a loop's are the same", n,
                         sm__node_num_outputs(node));
  const char *cname, *bname;
  sm_status *st = func_attr(node, "cond", &cname);
  if (!st) st = func_attr(node, "body", &bname);
  if (st) return st;
  while_state *w = calloc(1, sizeof *w);
  if (!w) return sm_status_new(SM_NO_MEMORY, "While: out of memory");
  w->n = n;
  st = compile(node, "cond", cname, n, -1, &w->cond);
  if (!st && sm__plan_num_fetches(w->cond) != 1)
    st = sm_status_new(SM_INVALID_ARGUMENT, "cond function '%s' gives %d outputs; expected a single scalar", cname,
                       sm__plan_num_fetches(w->cond));
  if (!st) st = compile(node, "body", bname, n, n, &w->body);
  /* the hoist is an optimisation (SM_LOOP_HOIST=0 turns it off, for A/B measurements); a body it
   * cannot compile runs plain, but out of memory is an error: the plain body's MatMul over fewer
   * rows need not give the hoisted product's bits (oneDNN's AVX2 gemm:jit does not) */
  const char *hv = getenv("SM_LOOP_HOIST");
  if (!st && !(hv && !strcmp(hv, "0"))) {
    sm_status *hs = sm__hoist_prepare(node, bname, n, &w->hoist);
    if (sm_status_code(hs) == SM_RESOURCE_EXHAUSTED) st = hs;
    else sm_status_free(hs);
  }
  if (st) {
    while_release(w);
    return st;
  }
  *state = w;
  return NULL;
}

/* Frees n tensors of v and clears them. */
static void drop(sm_tensor **v, int n) {
  for (int i = 0; i < n; i++) {
    sm_tensor_free(v[i]);
    v[i] = NULL;
  }
}

static sm_status *while_compute(const void *state, sm_kctx *ctx) {
  const while_state *w = state;
  int n = w->n;
  sm_status *st = NULL;
  /* the loop vars and the body's next values: kept across iterations */
  sm_tensor **cur = sm__kctx_scratch(ctx, (2 * (size_t)n + 1) * sizeof *cur, &st);
  if (!cur) return st;
  sm_tensor **next = cur + n;
  for (int i = 0; i < n; i++) {
    cur[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(ctx, i));
    next[i] = NULL;
  }
  int64_t it = 0;
  sm__hoist_run *hr = NULL;
  if (w->hoist && (st = sm__hoist_begin(w->hoist, ctx, cur, &hr))) {
    drop(cur, n);
    return st;
  }
  for (;; it++) {
    sm_tensor *pred = NULL;
    int go = 0;
    if ((st = sm__kctx_check_stop(ctx))) break;
    if ((st = sm__kctx_run_plan(ctx, w->cond, cur, n, &pred, 1))) break;
    st = to_bool(pred, &go);
    sm_tensor_free(pred);
    if (st) {
      st = sm_status_prefix(st, "cond");
      break;
    }
    if (!go) break;
    int done = 0;
    if (hr && (st = sm__hoist_step(w->hoist, hr, ctx, cur, next, &done))) break;
    if (!done && (st = sm__kctx_run_plan(ctx, w->body, cur, n, next, n))) break;
    for (int i = 0; i < n && !st; i++)
      if (sm_tensor_dtype(next[i]) != sm_tensor_dtype(cur[i]))
        st = sm_status_new(SM_INVALID_ARGUMENT, "body output %d is %s, but the loop var is %s", i,
                           dname(sm_tensor_dtype(next[i])), dname(sm_tensor_dtype(cur[i])));
    drop(cur, n);
    memcpy(cur, next, (size_t)n * sizeof *cur);
    memset(next, 0, (size_t)n * sizeof *next);
    if (st) break;
  }
  sm__hoist_end(hr);
  if (st) {
    drop(cur, n);
    return sm_status_prefix(st, "iteration %lld", (long long)it);
  }
  for (int i = 0; i < n; i++) {
    sm__kctx_set_output(ctx, i, cur[i]);
    cur[i] = NULL;
  }
  return NULL;
}

/* ---- If / StatelessIf, Case / StatelessCase ------------------------------------------------------- */
/* Both: input 0 picks one of nbranch sub-plans, which gets inputs 1.. and gives the outputs. */
typedef struct branch_state {
  int nbranch;
  int nin, nout;
  sm_plan *branch[]; /* If: then, else; Case: branches in order */
} branch_state;

static void branch_release(void *state) {
  branch_state *b = state;
  if (!b) return;
  for (int i = 0; i < b->nbranch; i++) sm__plan_free(b->branch[i]);
  free(b);
}

static sm_status *branch_new(const sm_node *node, int nbranch, branch_state **out) {
  *out = NULL;
  if (sm__node_num_inputs(node) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "no condition / branch index input");
  branch_state *b = calloc(1, sizeof *b + ((size_t)nbranch + 1) * sizeof b->branch[0]);
  if (!b) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", sm__node_op(node));
  b->nbranch = nbranch;
  b->nin = sm__node_num_inputs(node) - 1;
  b->nout = sm__node_num_outputs(node);
  *out = b;
  return NULL;
}

static sm_status *if_prepare(const sm_node *node, void **state) {
  *state = NULL;
  const char *tname, *ename;
  sm_status *st = func_attr(node, "then_branch", &tname);
  if (!st) st = func_attr(node, "else_branch", &ename);
  branch_state *b = NULL;
  if (!st) st = branch_new(node, 2, &b);
  if (!st) st = compile(node, "then_branch", tname, b->nin, b->nout, &b->branch[0]);
  if (!st) st = compile(node, "else_branch", ename, b->nin, b->nout, &b->branch[1]);
  if (st) {
    branch_release(b);
    return st;
  }
  *state = b;
  return NULL;
}

static sm_status *case_prepare(const sm_node *node, void **state) {
  *state = NULL;
  const Tensorflow__AttrValue *a = sm__node_attr(node, "branches");
  if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !a->list || a->list->n_func < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr 'branches' is not a non-empty list of functions");
  if (a->list->n_func > 1 << 20)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr 'branches' lists %zu functions", a->list->n_func);
  int nb = (int)a->list->n_func;
  branch_state *b;
  sm_status *st = branch_new(node, nb, &b);
  for (int i = 0; i < nb && !st; i++) {
    const Tensorflow__NameAttrList *f = a->list->func[i];
    if (!f || !f->name || !*f->name) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "branches[%d] names no function", i);
      break;
    }
    st = compile(node, "branches", f->name, b->nin, b->nout, &b->branch[i]);
    if (st) st = sm_status_prefix(st, "branches[%d]", i);
  }
  if (st) {
    branch_release(b);
    return st;
  }
  *state = b;
  return NULL;
}

/* Runs branch k of b on inputs 1.. and sets its results as the outputs. */
static sm_status *run_branch(const branch_state *b, int k, sm_kctx *ctx) {
  sm_status *st = NULL;
  sm_tensor **io = sm__kctx_scratch(ctx, ((size_t)b->nin + (size_t)b->nout + 1) * sizeof *io, &st);
  if (!io) return st;
  sm_tensor **outs = io + b->nin;
  for (int i = 0; i < b->nin; i++) io[i] = (sm_tensor *)sm__kctx_input(ctx, i + 1);
  if ((st = sm__kctx_run_plan(ctx, b->branch[k], io, b->nin, outs, b->nout))) return st;
  for (int i = 0; i < b->nout; i++) sm__kctx_set_output(ctx, i, outs[i]);
  return NULL;
}

static sm_status *if_compute(const void *state, sm_kctx *ctx) {
  int go;
  sm_status *st = to_bool(sm__kctx_input(ctx, 0), &go);
  if (st) return sm_status_prefix(st, "cond");
  return run_branch(state, go ? 0 : 1, ctx);
}

static sm_status *case_compute(const void *state, sm_kctx *ctx) {
  const branch_state *b = state;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  if (!t || sm_tensor_dtype(t) != SM_INT32 || sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "branch_index must be an int32 scalar, got %s of rank %d",
                         t ? dname(sm_tensor_dtype(t)) : "nothing", t ? sm_tensor_rank(t) : -1);
  int32_t k = *(const int32_t *)sm_tensor_data(t);
  if (k < 0 || k >= b->nbranch) k = b->nbranch - 1; /* TensorFlow: out of range runs the last branch */
  return run_branch(b, k, ctx);
}

const sm_kernel sm_kernels_control[] = {
    {"While", while_prepare, while_compute, while_release, 0},
    {"StatelessWhile", while_prepare, while_compute, while_release, 0},
    {"If", if_prepare, if_compute, branch_release, 0},
    {"StatelessIf", if_prepare, if_compute, branch_release, 0},
    {"Case", case_prepare, case_compute, branch_release, 0},
    {"StatelessCase", case_prepare, case_compute, branch_release, 0},
    {0},
};
