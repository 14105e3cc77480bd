/* fuzz_op.h - what the one-op fuzz targets (fuzz_media.c, fuzz_records.c) share: a table of one-node
 * graphs, each a DT_STRING Placeholder "in" feeding node "op" (with Const inputs where the op has
 * more), built into a session the first time its case is picked; the fuzzer's first byte picks the
 * case and the rest is fed as a scalar string, the path a model's DecodeX / ParseX node takes.
 * Every output of a run is touched, and a run that fails must fail with a status (never abort).
 * tests/unit/test_fuzz_regressions.c includes both targets into one file: this header is guarded. */
#ifndef SM_FUZZ_OP_H
#define SM_FUZZ_OP_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/pbtxt.h"

#define FOP_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define FOP_I(k, v) "attr { key: \"" k "\" value { i: " #v " } } "
#define FOP_B(k, v) "attr { key: \"" k "\" value { b: " #v " } } "
#define FOP_F(k, v) "attr { key: \"" k "\" value { f: " #v " } } "
#define FOP_S(k, v) "attr { key: \"" k "\" value { s: \"" v "\" } } "
#define FOP_CONST(name, t, body) \
  "node { name: \"" name "\" op: \"Const\" " FOP_T("dtype", t) "attr { key: \"value\" value { tensor { dtype: " t " " body " } } } }\n"
/* a graph: the string placeholder, then nodes (Consts, the "op" node) */
#define FOP_GRAPH(nodes)                                                                                          \
  "graph_def {\nnode { name: \"in\" op: \"Placeholder\" " FOP_T("dtype", "DT_STRING")                           \
  "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n" nodes "}\n"
/* the op node: its type, inputs after "in" (text), attrs (text) */
#define FOP_NODE(op, inputs, attrs) "node { name: \"op\" op: \"" op "\" input: \"in\" " inputs " " attrs " }\n"

#define FOP_MAXOUT 16
/* whether the last fop_run ran without an error status (test_fuzz_regressions checks the seeds do) */
static int fop_last_ok;
static char fop_last_err[256];
typedef struct {
  const char *graph;
  int nout; /* outputs of "op" fetched, op:0 .. op:nout-1 */
  sm_session *sess;
  ProtobufCMessage *mg;
} fop_case;

static void fop_free_cases(fop_case *c, int n) {
  for (int i = 0; i < n; i++) {
    sm__session_free(c[i].sess);
    if (c[i].mg) protobuf_c_message_free_unpacked(c[i].mg, NULL);
    c[i].sess = NULL;
    c[i].mg = NULL;
  }
}

static void fop_touch(const sm_tensor *t) {
  volatile uint8_t sink = 0;
  const uint8_t *p = sm_tensor_data(t);
  size_t nb = sm_tensor_nbytes(t);
  if (p && nb) sink ^= p[0] ^ p[nb - 1];
  if (!p)
    for (int64_t k = 0; k < sm_tensor_num_elements(t); k++) {
      size_t l = 0;
      const char *e = sm_tensor_string(t, k, &l);
      if (e && l) sink ^= (uint8_t)(e[0] ^ e[l - 1]);
    }
  (void)sink;
}

/* Runs case c on the bytes as a scalar string (built on first use; a graph that does not load is a
 * bug of the target: abort). */
#define FOP_RUN_BYTES ((size_t)256 << 20) /* each run's memory budget */

static void fop_run(fop_case *c, const char *target, const uint8_t *data, size_t size) {
  if (!c->sess) {
    sm_status *s = sm_pbtxt_parse(&tensorflow__meta_graph_def__descriptor, c->graph, strlen(c->graph), target, &c->mg);
    if (!s) s = sm__session_new((const Tensorflow__MetaGraphDef *)c->mg, NULL, 1, &c->sess);
    if (s) {
      fprintf(stderr, "%s: %s\n", target, sm_status_message(s));
      abort();
    }
  }
  static const char *const fetch[FOP_MAXOUT] = {"op:0", "op:1", "op:2",  "op:3",  "op:4",  "op:5",  "op:6",  "op:7",
                                                "op:8", "op:9", "op:10", "op:11", "op:12", "op:13", "op:14", "op:15"};
  static const char *const feed[] = {"in"};
  if (c->nout < 1 || c->nout > FOP_MAXOUT) abort();
  sm_tensor *in = NULL;
  if (sm_tensor_new(SM_STRING, 0, NULL, &in)) abort();
  if (sm_tensor_set_string(in, 0, data, size)) abort();
  sm_tensor *out[FOP_MAXOUT] = {0};
  /* a memory budget, as a server sets one: a few bytes can describe a tensor of gigabytes (ParseTensor),
   * which must come back as RESOURCE_EXHAUSTED, not as the fuzzer's out-of-memory */
  sm_run_options ro = {.max_run_bytes = FOP_RUN_BYTES};
  sm_status *s = sm__session_run_opts(c->sess, feed, &in, 1, fetch, c->nout, NULL, 0, out, &ro);
  fop_last_ok = !s;
  if (s) {
    const char *m = sm_status_message(s);
    if (!m) abort();
    snprintf(fop_last_err, sizeof fop_last_err, "%s", m);
    sm_status_free(s);
  } else {
    for (int i = 0; i < c->nout; i++) {
      if (!out[i]) abort();
      fop_touch(out[i]);
    }
  }
  for (int i = 0; i < c->nout; i++) sm_tensor_free(out[i]);
  sm_tensor_free(in);
}
#endif
