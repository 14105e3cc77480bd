/* rewrite_util.h - what tests/unit/test_rewrite.c and test_rewrite_bn.c share: the pbtxt graph
 * text (TF, PH, CONV, NODE1 / NODE2, BIAS, POOL, G, FCONST ...), running the plan-time rewrite as a
 * plan does (rewrite(), rewritten_free()) and reading what it made (describe(), synthetic(),
 * pos_of(), expect()), filled() tensors for runs, and the BatchNorm-fold graphs (fold_graph_op(),
 * fold_graph(), expect_fold(), FOLDED / DW_FOLDED) that the residual and swish cases start from as
 * well as the fold cases. The functions are static inline: a program that does not use one is not
 * warned about it. */
#ifndef SM_TEST_REWRITE_UTIL_H
#define SM_TEST_REWRITE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rewrite.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

/* ---- graph text ---------------------------------------------------------------------------- */
#define TF "attr { key: \"T\" value { type: DT_FLOAT } } "
#define TD "attr { key: \"T\" value { type: DT_DOUBLE } } "
#define PH(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } } "
#define PHD(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_DOUBLE } } } "
#define STRIDES1 "attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } "
#define CONV_ATTRS STRIDES1 "attr { key: \"padding\" value { s: \"SAME\" } } "
#define CONV(n, in, f) "node { name: \"" n "\" op: \"Conv2D\" input: \"" in "\" input: \"" f "\" " TF CONV_ATTRS "} "
#define NODE1(n, op, in) "node { name: \"" n "\" op: \"" op "\" input: \"" in "\" " TF "} "
#define NODE2(n, op, a, b) "node { name: \"" n "\" op: \"" op "\" input: \"" a "\" input: \"" b "\" " TF "} "
#define BIAS(n, in, b) NODE2(n, "BiasAdd", in, b)
#define POOL(n, in, k, s, pad)                                                                              \
  "node { name: \"" n "\" op: \"MaxPool\" input: \"" in "\" " TF "attr { key: \"ksize\" value { list { i: 1 i: " k \
  " i: " k " i: 1 } } } attr { key: \"strides\" value { list { i: 1 i: " s " i: " s                          \
  " i: 1 } } } attr { key: \"padding\" value { s: \"" pad "\" } } } "
#define G(body) "graph_def { " body "}"
#define FCONST(n, v)                                                                                   \
  "node { name: \"" n "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "            \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: " v " } } } } "

/* ---- running the rewrite as a plan does ------------------------------------------------------ */
typedef struct rewritten {
  sm_session *s;
  const sm_cgraph *g;
  int *pruned, npruned; /* the order before the rewrite */
  sm_rewrite *rw;
  const int *order; /* after */
  int norder;
} rewritten;

/* Space-separated tensor names into edges. */
static inline int edges_of(const sm_cgraph *g, const char *names, sm_edge *out, int cap) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", names ? names : "");
  for (char *t = strtok(buf, " "); t && n < cap; t = strtok(NULL, " "))
    CHECK_OK(sm__cgraph_resolve(g, t, &out[n++], NULL));
  return n;
}

/* Prunes the graph for feeds/fetches/targets (space-separated names) and rewrites the order. */
static inline int rewrite(const char *graph, const char *feeds, const char *fetches, const char *targets,
                          rewritten *r) {
  memset(r, 0, sizeof *r);
  CHECK_OK(sm__session_from_pbtxt(graph, &r->s));
  if (!r->s) return 0;
  r->g = sm__session_graph(r->s);
  sm_edge fd[8], ft[8];
  int t[8], nt = 0;
  int nfd = edges_of(r->g, feeds, fd, 8), nft = edges_of(r->g, fetches, ft, 8);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", targets ? targets : "");
  for (char *tok = strtok(buf, " "); tok && nt < 8; tok = strtok(NULL, " ")) t[nt++] = sm__cgraph_find(r->g, tok);
  CHECK_OK(sm__cgraph_prune(r->g, fd, nfd, ft, nft, t, nt, &r->pruned, &r->npruned));
  CHECK_OK(sm__rewrite_run(r->g, r->pruned, r->npruned, fd, nfd, ft, nft, &r->rw));
  if (!r->rw) return 0;
  r->order = sm__rewrite_order(r->rw, &r->norder);
  return 1;
}

static inline void rewritten_free(rewritten *r) {
  sm__rewrite_free(r->rw);
  free(r->pruned);
  sm__session_free(r->s);
}

/* "name=op[fused_ops](in:k,...)" for the node of id; "name" alone for an original node. */
static inline void describe(const sm_rewrite *rw, int id, char *buf, size_t cap) {
  const sm_node *n = sm__rewrite_node(rw, id);
  size_t at = (size_t)snprintf(buf, cap, "%s", sm__node_name(n));
  if (id < sm__cgraph_num_nodes(sm__rewrite_graph(rw)) || at >= cap) return;
  at += (size_t)snprintf(buf + at, cap - at, "=%s[", sm__node_op(n));
  const ProtobufCBinaryData *ops = NULL;
  size_t nops = 0;
  sm_status *st = sm__node_attr_strings(n, "fused_ops", &ops, &nops);
  sm_status_free(st);
  for (size_t i = 0; i < nops && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%.*s", i ? "," : "", (int)ops[i].len, (const char *)ops[i].data);
  for (int i = 0; i < sm__node_num_inputs(n) && at < cap; i++) {
    sm_edge e = sm__node_input(n, i);
    at += (size_t)snprintf(buf + at, cap - at, "%s%s:%d", i ? "," : "](", sm__node_name(sm__rewrite_node(rw, e.node)),
                           e.index);
  }
  if (at < cap) snprintf(buf + at, cap - at, ")");
}

/* Every synthetic node of the order, described, joined by spaces ("" when none). */
static inline void synthetic(const rewritten *r, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < r->norder && at < cap; i++) {
    if (r->order[i] < sm__cgraph_num_nodes(r->g)) continue;
    char one[256];
    describe(r->rw, r->order[i], one, sizeof one);
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? " " : "", one);
  }
}

static inline int pos_of(const int *order, int n, int id) {
  for (int i = 0; i < n; i++)
    if (order[i] == id) return i;
  return -1;
}

/* Rewrites and checks the synthetic nodes against `want` ("" for none). When `last` is given there
 * is one fused node and it must stand where node `last` stood, the removed nodes (all before it)
 * taken out. */
static inline void expect(const char *graph, const char *feeds, const char *fetches, const char *targets,
                          const char *want, const char *last) {
  rewritten r;
  if (rewrite(graph, feeds, fetches, targets, &r)) {
    char got[1024];
    synthetic(&r, got, sizeof got);
    if (strcmp(got, want)) fprintf(stderr, "fetches '%s' feeds '%s':\n", fetches, feeds ? feeds : "");
    CHECK_EQ_STR(got, want);
    if (last) {
      int fid = sm__cgraph_num_nodes(r.g), lid = sm__cgraph_find(r.g, last);
      int removed = r.npruned - r.norder;
      CHECK(sm__rewrite_num_synthetic(r.rw) == 1);
      CHECK_EQ_INT(pos_of(r.order, r.norder, fid), pos_of(r.pruned, r.npruned, lid) - removed);
      CHECK_EQ_INT(pos_of(r.order, r.norder, lid), -1);
      /* the last node's value is the fused node's now; the others' are gone */
      sm_edge e = sm__rewrite_edge(r.rw, (sm_edge){lid, 0});
      CHECK(e.node == fid && e.index == 0);
    }
  }
  rewritten_free(&r);
}

/* ---- tensors for runs --------------------------------------------------------------------------- */
static inline sm_tensor *filled(int rank, const int64_t *dims, uint32_t seed) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (!t) exit(1);
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    p[i] = (float)(((uint32_t)i * 2654435761u + seed * 40503u) >> 8) / 4194304.0f - 2.0f;
  return t;
}

/* ---- BatchNorm-fold graphs (nn_fold.c) --------------------------------------------------------- */
/* x -> `op` c (Conv2D or DepthwiseConv2dNative; filter f: a Const [2, 2, 3, cout] (for a depthwise
 * cout is the multiplier), or a Placeholder when fed_filter) [-> BiasAdd b (bias)] -> Mul m (scale
 * s, on the side `mul_left` says) -> AddV2 a (shift t) [-> act r], plus `extra` nodes. */
static inline char *fold_graph_op(const char *op, int cout, int bias, const char *act, int mul_left,
                                  int fed_filter, const char *extra) {
  size_t cap = 16384, at = 0;
  char *g = malloc(cap);
  if (!g) exit(1);
  at += (size_t)snprintf(g + at, cap - at, "graph_def { " PH("x") PH("s") PH("t") "%s", bias ? PH("bias") : "");
  if (fed_filter)
    at += (size_t)snprintf(g + at, cap - at, PH("f"));
  else {
    at += (size_t)snprintf(g + at, cap - at,
                           "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                           "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } "
                           "dim { size: 2 } dim { size: 3 } dim { size: %d } }",
                           cout);
    for (int i = 0; i < 12 * cout; i++)
      at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
    at += (size_t)snprintf(g + at, cap - at, " } } } } ");
  }
  const char *prev = bias ? "b" : "c";
  at += (size_t)snprintf(g + at, cap - at,
                         "node { name: \"c\" op: \"%s\" input: \"x\" input: \"f\" " TF CONV_ATTRS "} %s", op,
                         bias ? BIAS("b", "c", "bias") : "");
  at += (size_t)snprintf(g + at, cap - at, "node { name: \"m\" op: \"Mul\" input: \"%s\" input: \"%s\" " TF "} ",
                         mul_left ? "s" : prev, mul_left ? prev : "s");
  at += (size_t)snprintf(g + at, cap - at, NODE2("a", "AddV2", "m", "t"));
  if (act) at += (size_t)snprintf(g + at, cap - at, "node { name: \"r\" op: \"%s\" input: \"a\" " TF "} ", act);
  snprintf(g + at, cap - at, "%s}", extra ? extra : "");
  return g;
}

static inline char *fold_graph(int cout, int bias, const char *act, int mul_left, int fed_filter, const char *extra) {
  return fold_graph_op("Conv2D", cout, bias, act, mul_left, fed_filter, extra);
}

static inline void expect_fold(char *graph, const char *feeds, const char *fetches, const char *targets,
                               const char *want) {
  expect(graph, feeds, fetches, targets, want, NULL);
  free(graph);
}

#define FOLDED(in, act) \
  "c/_sm_fold_bn=_SmFoldBN[](" in ") c=_FusedConv2D[BiasAdd" act "](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)"

/* the same after a depthwise: TF's _FusedDepthwiseConv2dNative */
#define DW_FOLDED(in, act)                                                                 \
  "c/_sm_fold_bn=_SmFoldBN[](" in ") c=_FusedDepthwiseConv2dNative[BiasAdd" act "](x:0," \
  "c/_sm_fold_bn:0,c/_sm_fold_bn:1)"

#endif
