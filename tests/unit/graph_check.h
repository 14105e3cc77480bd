/* graph_check.h - helpers shared by the graph tests: compile every MetaGraph of a SavedModel,
 * check the compiled graph's invariants, and resolve + prune every signature. */
#ifndef SM_TEST_GRAPH_CHECK_H
#define SM_TEST_GRAPH_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "savedmodel/format.h"
#include "test.h"

/* Every edge in range, every name found again by sm__cgraph_find, all_ops sorted and unique. */
static void check_invariants(const sm_cgraph *g, const char *what) {
  int n = sm__cgraph_num_nodes(g), bad = 0;
  for (int i = 0; i < n && bad < 5; i++) {
    const sm_node *x = sm__cgraph_node(g, i);
    if (sm__cgraph_find(g, sm__node_name(x)) != i) {
      fprintf(stderr, "%s: node %d '%s' not found by name\n", what, i, sm__node_name(x));
      bad++;
    }
    for (int k = 0; k < sm__node_num_inputs(x); k++) {
      sm_edge e = sm__node_input(x, k);
      if (e.node < 0 || e.node >= n || e.index < 0 || e.index >= sm__node_num_outputs(sm__cgraph_node(g, e.node))) {
        fprintf(stderr, "%s: node '%s' input %d is (%d,%d)\n", what, sm__node_name(x), k, e.node, e.index);
        bad++;
      }
      if (sm__node_input_dtype(x, k) <= 0) bad++;
    }
    for (int k = 0; k < sm__node_num_control_inputs(x); k++) {
      int c = sm__node_control_input(x, k);
      if (c < 0 || c >= n) bad++;
    }
    for (int k = 0; k < sm__node_num_outputs(x); k++)
      if (sm__node_output_dtype(x, k) <= 0) bad++;
    if (!strcmp(sm__node_op(x), "StatefulPartitionedCall") || !strcmp(sm__node_op(x), "PartitionedCall")) {
      fprintf(stderr, "%s: call node '%s' not inlined\n", what, sm__node_name(x));
      bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  int nops = 0;
  const char *const *ops = sm__cgraph_all_ops(g, &nops);
  CHECK(nops > 0);
  for (int i = 1; i < nops; i++) CHECK(strcmp(ops[i - 1], ops[i]) < 0);
}

/* Compiles every MetaGraph; for every signature resolves inputs and outputs and prunes. Returns
 * the number of MetaGraphs compiled. */
static int check_saved_model(const Tensorflow__SavedModel *sm, const char *what) {
  int ok = 0;
  for (size_t m = 0; m < sm->n_meta_graphs; m++) {
    const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[m];
    sm_cgraph *g = NULL;
    sm_status *s = sm__cgraph_compile(mg, &g);
    if (s) {
      fprintf(stderr, "%s: metagraph %zu: %s\n", what, m, sm_status_message(s));
      sm_status_free(s);
      sm_test_failures++;
      continue;
    }
    ok++;
    check_invariants(g, what);
    for (size_t i = 0; i < mg->n_signature_def; i++) {
      const Tensorflow__SignatureDef *sig = mg->signature_def[i]->value;
      if (!sig) continue;
      sm_edge feeds[64], fetches[64];
      int targets[64], nf = 0, nt = 0, ntg = 0;
      for (size_t k = 0; k < sig->n_inputs && nf < 64; k++) {
        const Tensorflow__TensorInfo *ti = sig->inputs[k]->value;
        if (!ti || ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME) continue;
        CHECK_OK(sm__cgraph_resolve(g, ti->name, &feeds[nf], NULL));
        nf++;
      }
      for (size_t k = 0; k < sig->n_outputs && nt < 64; k++) {
        const Tensorflow__TensorInfo *ti = sig->outputs[k]->value;
        if (!ti || ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME) continue;
        int node = sm__cgraph_find(g, ti->name);
        if (node >= 0 && sm__node_num_outputs(sm__cgraph_node(g, node)) == 0) { /* the init op: a target */
          targets[ntg++] = node;
          continue;
        }
        sm_status *rs = sm__cgraph_resolve(g, ti->name, &fetches[nt], NULL);
        if (rs) {
          fprintf(stderr, "%s: signature '%s' output '%s': %s\n", what, mg->signature_def[i]->key, ti->name,
                  sm_status_message(rs));
          sm_status_free(rs);
          sm_test_failures++;
          continue;
        }
        nt++;
      }
      int *order = NULL, n = 0;
      s = sm__cgraph_prune(g, feeds, nf, fetches, nt, targets, ntg, &order, &n);
      if (s) {
        fprintf(stderr, "%s: prune of signature '%s': %s\n", what, mg->signature_def[i]->key, sm_status_message(s));
        sm_status_free(s);
        sm_test_failures++;
        continue;
      }
      CHECK(n > 0 && n <= sm__cgraph_num_nodes(g));
      /* topological: every needed input comes earlier */
      int *pos = malloc(sizeof(int) * (size_t)sm__cgraph_num_nodes(g));
      for (int k = 0; k < sm__cgraph_num_nodes(g); k++) pos[k] = -1;
      for (int k = 0; k < n; k++) {
        CHECK(pos[order[k]] < 0);
        pos[order[k]] = k;
      }
      for (int k = 0; k < n; k++) {
        const sm_node *x = sm__cgraph_node(g, order[k]);
        for (int c = 0; c < sm__node_num_control_inputs(x); c++) CHECK(pos[sm__node_control_input(x, c)] >= 0 &&
                                                                      pos[sm__node_control_input(x, c)] < k);
        for (int c = 0; c < sm__node_num_inputs(x); c++) {
          sm_edge e = sm__node_input(x, c);
          int fed = 0;
          for (int f = 0; f < nf; f++) fed |= feeds[f].node == e.node && feeds[f].index == e.index;
          if (!fed) CHECK(pos[e.node] >= 0 && pos[e.node] < k);
        }
      }
      free(pos);
      free(order);
    }
    sm__cgraph_free(g);
  }
  return ok;
}

#endif
