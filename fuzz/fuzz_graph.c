/* fuzz_graph.c - libFuzzer target: saved_model.pb bytes through the graph layer and the runtime's
 * plan builder, without executing a kernel.
 *
 * Each MetaGraph (at most 4) gets a session (which compiles the graph: inlining, attr defaults,
 * input resolution, cycle and recursion checks), then every node's attrs are read the way kernels
 * read them, every Const's tensor is decoded, and the plans sm_model_load builds are prepared:
 * the SaverDef's restore op fed its filename, the init op, and each signature from its inputs to
 * its outputs (kernel prepare functions run on the hostile attrs); and sm__file_ops walks it as
 * scan and validate do. tests/unit/test_fuzz_regressions.c
 * includes this file with FUZZ_GRAPH_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "runtime/verify.h"
#include "savedmodel/format.h"

#ifndef FUZZ_GRAPH_ENTRY
#define FUZZ_GRAPH_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_GRAPH_ENTRY(const uint8_t *data, size_t size);

#define FGR_MAX_NAMES 64

static void fgr_prepare(sm_session *s, const char *const *feeds, int nf, const char *const *fetches, int nt,
                        const char *const *targets, int ntg) {
  sm_status *st = sm__session_prepare(s, feeds, nf, fetches, nt, targets, ntg);
  if (st) (void)sm_status_message(st);
  sm_status_free(st);
}

static const char *fgr_info_name(const Tensorflow__TensorInfo *ti) {
  if (!ti) return NULL;
  if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME) return ti->name;
  return NULL;
}

/* The file-reading ops scan and validate report (sm__file_ops), over the hostile MetaGraph: every
 * entry names its op and node, and a path it gives comes with a source. */
static void fgr_file_ops(const Tensorflow__MetaGraphDef *mg) {
  sm_file_op *ops = NULL;
  size_t n = 0;
  sm_status *st = sm__file_ops("/nonexistent-fuzz-export", mg, &ops, &n);
  if (st && ops) abort();
  for (size_t i = 0; i < n; i++) {
    if (!ops[i].op || !ops[i].node || !ops[i].source || ops[i].inside < -1 || ops[i].inside > 1) abort();
    if (!ops[i].path && strcmp(ops[i].source, "computed")) abort();
  }
  sm__file_ops_free(ops, n);
  sm_status_free(st);
}

static void fgr_one(const Tensorflow__MetaGraphDef *mg) {
  fgr_file_ops(mg);
  sm_session *s = NULL;
  /* the load budget a loader gives a small export (the defaults' floors): a few bytes of protobuf
   * must not make the harness allocate gigabytes (a Const of shape [32768, 32768], say) */
  sm_load_budget budget;
  sm__load_budget_for(NULL, 0, 0, &budget);
  sm_status *st = sm__session_new_budget(mg, NULL, 1, &budget, &s);
  if (st) {
    (void)sm_status_message(st);
    sm_status_free(st);
    return;
  }
  const sm_cgraph *g = sm__session_graph(s);
  int n = sm__cgraph_num_nodes(g);
  for (int i = 0; i < n; i++) {
    const sm_node *nd = sm__cgraph_node(g, i);
    if (!nd || !sm__node_name(nd) || !sm__node_op(nd)) abort();
    for (int k = 0; k < sm__node_num_inputs(nd); k++) {
      sm_edge e = sm__node_input(nd, k);
      if (e.node < 0 || e.node >= n || e.index < 0 || e.index >= sm__node_num_outputs(sm__cgraph_node(g, e.node)))
        abort(); /* compile promised every input resolved */
      (void)sm__node_input_dtype(nd, k);
    }
    for (int k = 0; k < sm__node_num_control_inputs(nd); k++) {
      int c = sm__node_control_input(nd, k);
      if (c < 0 || c >= n) abort();
    }
    int rank;
    int64_t dims[SM_MAX_RANK];
    int dt;
    const char *str;
    size_t len;
    sm_status_free(sm__node_attr_type(nd, "dtype", &dt));
    sm_status_free(sm__node_attr_type(nd, "T", &dt));
    sm_status_free(sm__node_attr_shape(nd, "shape", &rank, dims));
    sm_status_free(sm__node_attr_string(nd, "shared_name", &str, &len));
    sm_tensor *t = NULL;
    sm_load_budget *prev = sm__load_budget_swap(&budget);
    sm_status *ts = sm__node_attr_tensor(nd, "value", &t);
    sm__load_budget_swap(prev);
    if (ts && t) abort(); /* no tensor on error */
    sm_status_free(ts);
    sm_tensor_free(t);
  }
  /* restore: feed the filename tensor, run the restore op (prepared only) */
  const Tensorflow__SaverDef *sv = mg->saver_def;
  if (sv && sv->restore_op_name && *sv->restore_op_name) {
    const char *feed = sv->filename_tensor_name ? sv->filename_tensor_name : "";
    const char *target = sv->restore_op_name;
    fgr_prepare(s, &feed, 1, NULL, 0, &target, 1);
  }
  /* each signature, inputs to outputs */
  for (size_t i = 0; i < mg->n_signature_def && i < 16; i++) {
    const Tensorflow__SignatureDef *sd = mg->signature_def[i] ? mg->signature_def[i]->value : NULL;
    if (!sd) continue;
    const char *in[FGR_MAX_NAMES], *out[FGR_MAX_NAMES];
    int nin = 0, nout = 0;
    for (size_t k = 0; k < sd->n_inputs && nin < FGR_MAX_NAMES; k++) {
      const char *nm = sd->inputs[k] ? fgr_info_name(sd->inputs[k]->value) : NULL;
      if (nm) in[nin++] = nm;
    }
    for (size_t k = 0; k < sd->n_outputs && nout < FGR_MAX_NAMES; k++) {
      const char *nm = sd->outputs[k] ? fgr_info_name(sd->outputs[k]->value) : NULL;
      if (nm) out[nout++] = nm;
    }
    if (mg->signature_def[i]->key && !strcmp(mg->signature_def[i]->key, "__saved_model_init_op"))
      fgr_prepare(s, NULL, 0, NULL, 0, out, nout);
    else
      fgr_prepare(s, in, nin, out, nout, NULL, 0);
  }
  sm__session_free(s);
}

int FUZZ_GRAPH_ENTRY(const uint8_t *data, size_t size) {
  Tensorflow__SavedModel *sm = NULL;
  sm_status *s = sm_saved_model_parse(data, size, "fuzz.pb", &sm);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  for (size_t i = 0; i < sm->n_meta_graphs && i < 4; i++)
    if (sm->meta_graphs[i]) fgr_one(sm->meta_graphs[i]);
  sm_saved_model_free(sm);
  return 0;
}
