/* graph_internal.h - the layout of sm_cgraph and sm_node, shared by the files of src/graph. */
#ifndef SM_GRAPH_INTERNAL_H
#define SM_GRAPH_INTERNAL_H

#include <stdint.h>

#include "graph/graph.h"

/* Limits that keep hostile graphs (a function called twice per level, 40 levels deep; a node with
 * a million inputs inlined a million times) from taking unbounded memory. Real SavedModels are
 * orders of magnitude below them. */
#define SM_GRAPH_MAX_NODES (4 << 20)
/* The node limit in force (SM_GRAPH_MAX_NODES; tests lower it to reach it quickly). */
extern int sm__graph_max_nodes;
#define SM_GRAPH_MAX_EDGES (64 << 20)
#define SM_GRAPH_MAX_INLINE_DEPTH 64
#define SM_GRAPH_MAX_ARG_LEN (1 << 20) /* elements of one list arg (number_attr, type lists) */

typedef struct sm_attr_ref {
  const char *name;
  const Tensorflow__AttrValue *value;
} sm_attr_ref;

/* A string -> int open-addressing map; keys are borrowed. */
typedef struct sm_smap {
  const char **keys;
  int *vals;
  size_t cap, n;
} sm_smap;
int sm__smap_put(sm_smap *m, const char *key, int val); /* 0 on out of memory; replaces */
int sm__smap_get(const sm_smap *m, const char *key);    /* -1 when absent */
void sm__smap_free(sm_smap *m);

/* "an int", "a list", ... for an AttrValue value_case, in error messages. */
const char *sm__attr_kind_name(int value_case);
/* The AttrValue value_case an attr of OpDef type `type` ("int", "list(string)", ...) must have;
 * -1 when not checked. */
int sm__attr_kind_for(const char *type);

struct sm_node {
  char *name; /* owned */
  const char *op;
  const char *device;
  const Tensorflow__OpDef *def;
  int stateful;
  int ninputs;
  sm_edge *inputs;
  int *in_dtypes;
  int ncontrol;
  int *control;
  int noutputs;
  int *out_dtypes;
  int nattrs;
  sm_attr_ref *attrs;
  void *owned; /* an AttrValue made here (a call's "T"), freed with the node */
  const sm_frame *frame; /* a "_TF1Loop" node's frame (frames.c), owned by the graph */
  const char *cf_error;  /* a node of a TF1 frame that is not a loop: why (owned by the graph) */
};

/* The dtypes of n's inputs and outputs as its OpDef and attrs give them: new arrays the caller
 * frees (synth.c builds synthetic nodes with it; compilation has its own pass). */
sm_status *sm__node_arg_dtypes(const sm_node *n, int **in, int *nin, int **out, int *nout);

struct sm_cgraph {
  const Tensorflow__MetaGraphDef *mg;
  sm_node *nodes;
  int n, cap;
  sm_smap names;   /* node name -> index */
  sm_smap opdefs;  /* op name -> index into mg's stripped_op_list */
  sm_smap funcs;   /* function name -> index into the library */
  const char **all_ops;
  int nall_ops;
  int64_t nedges;
  sm_load_budget *budget;            /* the load budget current when it was compiled; NULL: none */
  int64_t charged_nodes, charged_bytes; /* what it took from it, given back by sm__cgraph_free */
  /* A function compiled as its own graph (sm__cgraph_compile_function): its name, its _Arg nodes'
   * outputs (flat, in signature order), its return values (flat, in signature order) and its
   * control outputs (node indices). fname NULL for a graph compiled from a GraphDef. */
  const char *fname;
  sm_edge *fn_args, *fn_rets;
  int nfn_args, nfn_rets;
  int *fn_ctl;
  int nfn_ctl;
  sm_frame **frames; /* TF1 loop frames (frames.c), recognised or refused */
  int nframes;
};

/* frames.c: every TF1 loop frame of g (Enter .. Exit) replaced by one "_TF1Loop" node; a frame
 * that is not a loop is left as it is, its nodes' cf_error saying why. */
sm_status *sm__cgraph_functionalize(sm_cgraph *g);
void sm__frames_free(sm_cgraph *g);

#endif
