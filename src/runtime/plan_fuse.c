/* plan_fuse.c - plan-time fusion, as plan building has done it so far: a float Conv2D (NHWC) or
 * MatMul whose only reader is a BiasAdd, maybe then a Relu/Relu6 and (Conv2D) a MaxPool, each the
 * only reader of the one before, computes the whole chain; the fused-away steps pass the value on.
 * The kernels read what to fuse through sm_kctx_fused_bias / _act / _pool (executor.c).
 *
 * Self-contained on purpose: a graph rewrite that emits fused nodes replaces it, and then this file,
 * its call in plan.c (sm__plan_fuse), the fused_* / pass_through fields of sm_step and the
 * sm_kctx_fused_* accessors go together. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

static int op_is(const sm_node *n, const char *op) { return !strcmp(sm_node_op(n), op); }

/* data_format absent or NHWC */
static int nhwc(const sm_node *n) {
  const char *f;
  size_t len;
  if (!sm_node_attr(n, "data_format")) return 1;
  sm_status *st = sm_node_attr_string(n, "data_format", &f, &len);
  if (st) {
    sm_status_free(st);
    return 0;
  }
  return len == 4 && !memcmp(f, "NHWC", 4);
}

/* Passes a fused-away step's input 0 on as its output 0. */
static sm_status *pass_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_kctx_forward(ctx, 0, 0);
  return NULL;
}
static const sm_kernel pass_kernel = {"(fused)", NULL, pass_compute, NULL, 0};

/* Turns step sp into a pass-through (before kernels are prepared: it never gets a state). */
static void make_pass(sm_step *sp) {
  sp->pass_through = 1;
  sp->k = &pass_kernel;
}

/* 1 and *f filled when the MaxPool node's attrs let it be fused into the conv before it: its
 * kernel's prepare is run here just to read them (an error is left for the real prepare). */
static int pool_fusable(const sm_step *qs, const sm_node *qn, sm_nn_pool_fuse *f) {
  void *state = NULL;
  if (!qs->k->prepare) return 0;
  sm_status *st = qs->k->prepare(qn, &state);
  int ok = !st && sm_nn_maxpool_fusable(state, f);
  sm_status_free(st);
  if (!st && state && qs->k->release) qs->k->release(state);
  return ok;
}

/* The step reading slot `sl`, when exactly one step reads it exactly once and no fetch does;
 * else -1. */
static int only_reader(const sm_plan *p, const int *nreaders, const unsigned char *fetched, int norder, int sl) {
  if (nreaders[sl] != 1 || fetched[sl]) return -1;
  for (int i = 0; i < norder; i++)
    for (int j = 0; j < p->steps[i].nin; j++)
      if (p->steps[i].in_slot && p->steps[i].in_slot[j] == sl) return i;
  return -1;
}

/* Conv2D/MatMul + BiasAdd (+ Relu/Relu6) fusion. May move a product down to just before its BiasAdd
 * (see below), so the caller computes release points after. */
sm_status *sm__plan_fuse(sm_plan *p, int norder, const int *node_base) {
  int nfetches = p->nfetches;
  const sm_edge *fetch_edges = p->fetch_edges;
  int *nreaders = calloc((size_t)p->nslots + 1, sizeof *nreaders);
  unsigned char *fetched = calloc((size_t)p->nslots + 1, 1);
  int *producer = malloc(((size_t)p->nslots + 1) * sizeof *producer); /* step writing each slot; -1: a feed */
  if (!nreaders || !fetched || !producer) {
    free(nreaders);
    free(fetched);
    free(producer);
    return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  }
  for (int sl = 0; sl < p->nslots; sl++) producer[sl] = -1;
  for (int i = 0; i < norder; i++)
    for (int k = 0; k < p->steps[i].nout; k++) producer[p->steps[i].out_base + k] = i;
  for (int i = 0; i < nfetches; i++) {
    int sl = sm__plan_slot_of(p, node_base, fetch_edges[i]);
    if (sl >= 0) fetched[sl] = 1;
  }
  for (int i = 0; i < norder; i++)
    for (int j = 0; j < p->steps[i].nin; j++)
      if (p->steps[i].in_slot) nreaders[p->steps[i].in_slot[j]]++;
  sm_status *st = NULL;
  for (int i = 0; i < norder && !st; i++) {
    sm_step *sp = &p->steps[i];
    const sm_node *nd = sp->node;
    if (sp->fused_bias_slot >= 0) continue; /* moved down here and fused already */
    if (!sp->k || sp->nout != 1 || sm_node_output_dtype(nd, 0) != SM_FLOAT) continue;
    if (!((op_is(nd, "Conv2D") && nhwc(nd)) || op_is(nd, "MatMul"))) continue;
    int b = only_reader(p, nreaders, fetched, norder, sp->out_base);
    if (b < 0) continue;
    sm_step *bs = &p->steps[b];
    const sm_node *bn = bs->node;
    if (!bs->k || bs->nin != 2 || bs->in_slot[0] != sp->out_base || bs->in_mode[1] != SM_IN_PASS ||
        sm_node_output_dtype(bn, 0) != SM_FLOAT || !(op_is(bn, "BiasAddV1") || (op_is(bn, "BiasAdd") && nhwc(bn))))
      continue;
    /* The bias must exist when the product runs. When a step between the two makes it (Keras
     * exports reshape the bias variable after the Conv2D in topological order), the product moves
     * down to just before the BiasAdd: nothing in between reads it (the BiasAdd is its only
     * reader), and its inputs are plain values already computed (no ref read whose variable a
     * step in between could assign). */
    int pb = producer[bs->in_slot[1]];
    if (pb > i) {
      int plain = pb < b;
      for (int j = 0; j < sp->nin && plain; j++) plain = sp->in_mode[j] == SM_IN_PASS;
      if (!plain) continue;
      sm_step moved = *sp;
      memmove(&p->steps[i], &p->steps[i + 1], (size_t)(b - 1 - i) * sizeof *p->steps);
      p->steps[b - 1] = moved;
      for (int q = i; q < b; q++)
        for (int k = 0; k < p->steps[q].nout; k++) producer[p->steps[q].out_base + k] = q;
      sp = &p->steps[b - 1];
      i--; /* the step now at i has not been looked at */
    }
    sp->fused_bias_slot = bs->in_slot[1];
    make_pass(bs);
    sm_step *last = bs; /* the last step fused so far */
    int r = only_reader(p, nreaders, fetched, norder, bs->out_base);
    if (r >= 0) {
      sm_step *rs = &p->steps[r];
      const sm_node *rn = rs->node;
      int act = !rs->k || rs->nin != 1 || sm_node_output_dtype(rn, 0) != SM_FLOAT ? SM_NN_ACT_NONE
                : op_is(rn, "Relu")                                          ? SM_NN_ACT_RELU
                : op_is(rn, "Relu6")                                         ? SM_NN_ACT_RELU6
                                                                             : SM_NN_ACT_NONE;
      if (act != SM_NN_ACT_NONE) {
        sp->fused_act = act;
        make_pass(rs);
        last = rs;
      }
    }
    /* then a MaxPool (Keras Conv2D -> MaxPooling2D): the conv writes only the pooled output */
    if (!op_is(nd, "Conv2D")) continue;
    int q = only_reader(p, nreaders, fetched, norder, last->out_base);
    if (q < 0) continue;
    sm_step *qs = &p->steps[q];
    const sm_node *qn = qs->node;
    if (!qs->k || qs->nin != 1 || qs->nout != 1 || qs->in_mode[0] != SM_IN_PASS || !op_is(qn, "MaxPool") ||
        sm_node_output_dtype(qn, 0) != SM_FLOAT || !pool_fusable(qs, qn, &sp->fused_pool))
      continue;
    sp->has_fused_pool = 1;
    make_pass(qs);
  }
  free(nreaders);
  free(fetched);
  free(producer);
  return st;
}
