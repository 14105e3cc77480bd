/* control_v1.c - the TF1 control flow kernel family (graphs of tf.compat.v1 with control flow v1):
 * Switch / RefSwitch, Merge / RefMerge, ControlTrigger, and "_TF1Loop", the loop the graph layer
 * makes of each TF1 loop frame (src/graph/frames.c); Enter, Exit, NextIteration and LoopCond (and
 * their Ref forms) only exist for frames that could not be turned into a loop, and refuse at load.
 *
 * Switch and Merge run with dead tensors as TensorFlow's executor defines them (the executor does
 * the propagation, plan.h's has_dead): Switch(data, pred) forwards data to output 1 when pred is
 * true, to output 0 otherwise, and leaves the other output unset (dead); Merge sees its dead inputs
 * as absent and forwards its live one, with its index as value_index. A Merge with two live inputs
 * is MergeOp's error ("Merge can not have more than one valid input."): TensorFlow fires a Merge on
 * the first live input to arrive, so what it gives then depends on its scheduling (a Merge of two
 * live constants gives the first; of a computed value and a constant, the constant); no graph TF1
 * writes (cond, case) has one outside a loop, and here every input is computed before the Merge
 * runs, so refusing is the one answer that is never wrong.
 *
 * _TF1Loop compiles the frame's cond and body, at load, into two plans over the graph itself
 * (sm__prepare_graph_plan): cond on (loop vars, invariants) -> the LoopCond input, a bool scalar;
 * body on (loop vars as Switch:1, loop vars as Merge:0, invariants) -> the NextIteration inputs.
 * Per iteration: the run's deadline and cancel flag, cond, body; the outputs are the loop vars when
 * cond is false (the frame's Exits read them). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

/* ---- Switch, Merge, ControlTrigger -------------------------------------------------------------- */
static sm_status *switch_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *pred = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(pred) != 0) {
    char b[64];
    return sm_status_new(SM_INVALID_ARGUMENT, "The second input must be a scalar, but it has shape %s",
                         sm_shape_str(sm_tensor_rank(pred), sm_tensor_dims(pred), b, sizeof b));
  }
  if (sm_tensor_dtype(pred) != SM_BOOL)
    return sm_status_new(SM_INVALID_ARGUMENT, "the predicate is %s, not bool", dname(sm_tensor_dtype(pred)));
  int go = *(const unsigned char *)sm_tensor_data(pred) != 0;
  sm__kctx_forward(ctx, 0, go ? 1 : 0); /* the other output stays unset: dead */
  return NULL;
}

static sm_status *merge_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int n = sm__kctx_num_inputs(ctx), live = -1;
  for (int i = 0; i < n; i++) {
    if (!sm__kctx_input(ctx, i)) continue;
    if (live >= 0) return sm_status_new(SM_INTERNAL, "Merge can not have more than one valid input.");
    live = i;
  }
  if (live < 0) return sm_status_new(SM_INTERNAL, "Merge runs with no live input");
  sm_tensor *vi;
  sm_status *st = sm__kctx_alloc_output(ctx, 1, SM_INT32, 0, NULL, &vi);
  if (st) return st;
  *(int32_t *)sm_tensor_data(vi) = live;
  sm__kctx_forward(ctx, live, 0);
  return NULL;
}

static sm_status *trigger_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  (void)ctx;
  return NULL;
}

/* Enter, Exit, NextIteration, LoopCond outside a loop the graph layer recognised. */
static sm_status *frame_node_prepare(const sm_node *node, void **state) {
  *state = NULL;
  const char *why = sm__node_cf_error(node);
  return sm_status_new(SM_UNIMPLEMENTED, "%s",
                       why ? why
                           : "this TF1 control flow node is not part of a loop frame (Enter .. Merge, Switch on a "
                             "LoopCond, NextIteration .. Exit) this runtime recognises");
}

/* ---- _TF1Loop --------------------------------------------------------------------------------- */
typedef struct loop_state {
  sm_plan *cond, *body;
  int nv, ni;
} loop_state;

static void loop_release(void *state) {
  loop_state *l = state;
  if (!l) return;
  sm__plan_free(l->cond);
  sm__plan_free(l->body);
  free(l);
}

static sm_status *loop_prepare(const sm_node *node, void **state) {
  *state = NULL;
  const sm_frame *f = sm__node_frame(node);
  if (!f) return sm_status_new(SM_INVALID_ARGUMENT, "not a TF1 loop frame made by the graph layer");
  if (sm__node_num_inputs(node) != f->nvars + f->ninv || sm__node_num_outputs(node) != f->nvars)
    return sm_status_new(SM_INTERNAL, "the loop node does not match its frame");
  loop_state *l = calloc(1, sizeof *l);
  sm_edge *feeds = malloc(((size_t)2 * (size_t)f->nvars + (size_t)f->ninv + 1) * sizeof *feeds);
  sm_status *st = NULL;
  if (!l || !feeds) {
    free(l);
    free(feeds);
    return sm_status_new(SM_NO_MEMORY, "TF1 loop: out of memory");
  }
  l->nv = f->nvars;
  l->ni = f->ninv;
  /* cond: Merge:0 per var, the invariants */
  memcpy(feeds, f->merge_out, (size_t)f->nvars * sizeof *feeds);
  memcpy(feeds + f->nvars, f->inv_out, (size_t)f->ninv * sizeof *feeds);
  sm_plan_spec cs = {feeds, f->nvars + f->ninv, &f->pred, 1, NULL, 0, NULL, NULL};
  if ((st = sm__prepare_graph_plan(node, &cs, &l->cond))) st = sm_status_prefix(st, "loop frame '%s': cond", f->name);
  /* body: Switch:1 per var, Merge:0 per var, the invariants */
  memcpy(feeds, f->body_in, (size_t)f->nvars * sizeof *feeds);
  memcpy(feeds + f->nvars, f->merge_out, (size_t)f->nvars * sizeof *feeds);
  memcpy(feeds + 2 * f->nvars, f->inv_out, (size_t)f->ninv * sizeof *feeds);
  sm_plan_spec bs = {feeds, 2 * f->nvars + f->ninv, f->next_in, f->nvars, f->next_ctl, f->nnext_ctl, NULL, NULL};
  if (!st && (st = sm__prepare_graph_plan(node, &bs, &l->body)))
    st = sm_status_prefix(st, "loop frame '%s': body", f->name);
  free(feeds);
  if (st) {
    loop_release(l);
    return st;
  }
  *state = l;
  return NULL;
}

static sm_status *loop_compute(const void *state, sm_kctx *ctx) {
  const loop_state *l = state;
  int nv = l->nv, ni = l->ni;
  sm_status *st = NULL;
  /* io: [cur (nv) | cur again (nv) | invariants (ni)] is the body's feed list, [cur | invariants]
   * rearranged per call for cond; then next (nv) */
  size_t nio = 3 * (size_t)nv + (size_t)ni + 1;
  sm_tensor **io = sm__kctx_scratch(ctx, nio * sizeof *io, &st);
  if (!io) return st;
  sm_tensor **cur = io, **inv = io + 2 * nv, **next = io + 2 * nv + ni;
  sm_tensor **cfeed = sm__kctx_scratch(ctx, ((size_t)nv + (size_t)ni + 1) * sizeof *cfeed, &st);
  if (!cfeed) return st;
  for (int i = 0; i < nv; i++) {
    cur[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(ctx, i));
    next[i] = NULL;
  }
  for (int i = 0; i < ni; i++) inv[i] = (sm_tensor *)sm__kctx_input(ctx, nv + i);
  int64_t it = 0;
  for (;; it++) {
    if ((st = sm__kctx_check_stop(ctx))) break;
    memcpy(cfeed, cur, (size_t)nv * sizeof *cfeed);
    memcpy(cfeed + nv, inv, (size_t)ni * sizeof *cfeed);
    sm_tensor *pred = NULL;
    if ((st = sm__kctx_run_plan(ctx, l->cond, cfeed, nv + ni, &pred, 1))) break;
    if (sm_tensor_dtype(pred) != SM_BOOL || sm_tensor_rank(pred) != 0) {
      char b[64];
      st = sm_status_new(SM_INVALID_ARGUMENT, "LoopCond: the loop condition must be a bool scalar, got %s of shape %s",
                         dname(sm_tensor_dtype(pred)),
                         sm_shape_str(sm_tensor_rank(pred), sm_tensor_dims(pred), b, sizeof b));
      sm_tensor_free(pred);
      break;
    }
    int go = *(const unsigned char *)sm_tensor_data(pred) != 0;
    sm_tensor_free(pred);
    if (!go) break;
    memcpy(cur + nv, cur, (size_t)nv * sizeof *cur); /* borrowed: the body's Merge:0 feeds */
    if ((st = sm__kctx_run_plan(ctx, l->body, cur, 2 * nv + ni, next, nv))) break;
    for (int i = 0; i < nv && !st; i++)
      if (sm_tensor_dtype(next[i]) != sm_tensor_dtype(cur[i]))
        st = sm_status_new(SM_INVALID_ARGUMENT, "NextIteration %d is %s, but the loop var is %s", i,
                           dname(sm_tensor_dtype(next[i])), dname(sm_tensor_dtype(cur[i])));
    for (int i = 0; i < nv; i++) {
      sm_tensor_free(cur[i]);
      cur[i] = next[i];
      next[i] = NULL;
    }
    if (st) break;
  }
  if (st) {
    for (int i = 0; i < nv; i++) sm_tensor_free(cur[i]);
    return sm_status_prefix(st, "loop frame '%s', iteration %lld", sm__node_frame(sm__kctx_node(ctx))->name,
                            (long long)it);
  }
  for (int i = 0; i < nv; i++) sm__kctx_set_output(ctx, i, cur[i]);
  return NULL;
}

const sm_kernel sm_kernels_control_v1[] = {
    {"Switch", NULL, switch_compute, NULL, 0},
    {"RefSwitch", NULL, switch_compute, NULL, 0},
    {"Merge", NULL, merge_compute, NULL, 0},
    {"RefMerge", NULL, merge_compute, NULL, 0},
    {"ControlTrigger", NULL, trigger_compute, NULL, 0},
    {"_TF1Loop", loop_prepare, loop_compute, loop_release, 0},
    {"Enter", frame_node_prepare, trigger_compute, NULL, 0},
    {"RefEnter", frame_node_prepare, trigger_compute, NULL, 0},
    {"Exit", frame_node_prepare, trigger_compute, NULL, 0},
    {"RefExit", frame_node_prepare, trigger_compute, NULL, 0},
    {"NextIteration", frame_node_prepare, trigger_compute, NULL, 0},
    {"RefNextIteration", frame_node_prepare, trigger_compute, NULL, 0},
    {"LoopCond", frame_node_prepare, trigger_compute, NULL, 0},
    {0},
};
