/* fuzz_example.c - libFuzzer target: bytes as serialized tf.Example through the ParseExampleV2
 * kernel (the wire walker of src/ops/parsing.c), in a session built once.
 *
 * The graph parses sparse key "sp" (int64), dense keys "f" (float [2]), "i" (int64 [3]), "s"
 * (string [2], with a default), "v" (float [-1, 2], variable length) and ragged key "rg" (float),
 * the keys of the seeds in fuzz/seeds/fuzz_example. The input is fed as a batch of one, and then
 * cut in two at its first byte's position as a batch of two. Every output is touched.
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_EXAMPLE_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/pbtxt.h"

#ifndef FUZZ_EXAMPLE_ENTRY
#define FUZZ_EXAMPLE_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_EXAMPLE_ENTRY(const uint8_t *data, size_t size);

#define FEX_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define FEX_CONST(name, t, body) \
  "node { name: \"" name "\" op: \"Const\" " FEX_T("dtype", t) "attr { key: \"value\" value { tensor { dtype: " t " " body " } } } }\n"

static const char fex_graph[] =
    "graph_def {\n"
    "node { name: \"ser\" op: \"Placeholder\" " FEX_T("dtype", "DT_STRING")
    "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"
    FEX_CONST("names", "DT_STRING", "tensor_shape { dim { size: 0 } }")
    FEX_CONST("sk", "DT_STRING", "tensor_shape { dim { size: 1 } } string_val: \"sp\"")
    FEX_CONST("dk", "DT_STRING", "tensor_shape { dim { size: 4 } } string_val: \"f\" string_val: \"i\" string_val: \"s\" string_val: \"v\"")
    FEX_CONST("rk", "DT_STRING", "tensor_shape { dim { size: 1 } } string_val: \"rg\"")
    FEX_CONST("df", "DT_FLOAT", "tensor_shape { dim { size: 0 } }")
    FEX_CONST("di", "DT_INT64", "tensor_shape { dim { size: 0 } }")
    FEX_CONST("ds", "DT_STRING", "tensor_shape { dim { size: 2 } } string_val: \"d1\" string_val: \"d2\"")
    FEX_CONST("dv", "DT_FLOAT", "tensor_shape {} float_val: -1")
    "node { name: \"p\" op: \"ParseExampleV2\" input: \"ser\" input: \"names\" input: \"sk\" input: \"dk\" "
    "input: \"rk\" input: \"df\" input: \"di\" input: \"ds\" input: \"dv\" "
    "attr { key: \"num_sparse\" value { i: 1 } } "
    "attr { key: \"sparse_types\" value { list { type: DT_INT64 } } } "
    "attr { key: \"Tdense\" value { list { type: DT_FLOAT type: DT_INT64 type: DT_STRING type: DT_FLOAT } } } "
    "attr { key: \"ragged_value_types\" value { list { type: DT_FLOAT } } } "
    "attr { key: \"ragged_split_types\" value { list { type: DT_INT64 } } } "
    "attr { key: \"dense_shapes\" value { list { shape { dim { size: 2 } } shape { dim { size: 3 } } "
    "shape { dim { size: 2 } } shape { dim { size: -1 } dim { size: 2 } } } } } }\n"
    "}\n";

#define FEX_NOUT 9
static sm_session *fex_sess;
static ProtobufCMessage *fex_mg;

static void fex_cleanup(void) {
  sm__session_free(fex_sess);
  protobuf_c_message_free_unpacked(fex_mg, NULL);
  fex_sess = NULL;
  fex_mg = NULL;
}

static void fex_init(void) {
  if (fex_sess) return;
  sm_status *s = sm_pbtxt_parse(&tensorflow__meta_graph_def__descriptor, fex_graph, strlen(fex_graph), "fuzz graph",
                                &fex_mg);
  if (!s) s = sm__session_new((const Tensorflow__MetaGraphDef *)fex_mg, NULL, 1, &fex_sess);
  if (s) {
    fprintf(stderr, "fuzz_example: %s\n", sm_status_message(s));
    abort();
  }
  atexit(fex_cleanup);
}

static void fex_run(const uint8_t *const *ex, const size_t *lens, int n) {
  static const char *const fetch[FEX_NOUT] = {"p:0", "p:1", "p:2", "p:3", "p:4", "p:5", "p:6", "p:7", "p:8"};
  static const char *const feed[] = {"ser"};
  int64_t d = n;
  sm_tensor *in = NULL;
  if (sm_tensor_new(SM_STRING, 1, &d, &in)) abort();
  for (int i = 0; i < n; i++)
    if (sm_tensor_set_string(in, i, ex[i], lens[i])) abort();
  sm_tensor *out[FEX_NOUT] = {0};
  sm_status *s = sm__session_run(fex_sess, feed, &in, 1, fetch, FEX_NOUT, NULL, 0, out);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
  } else {
    volatile uint8_t sink = 0;
    for (int i = 0; i < FEX_NOUT; i++) {
      if (!out[i]) abort();
      const uint8_t *p = sm_tensor_data(out[i]);
      size_t nb = sm_tensor_nbytes(out[i]);
      if (p && nb) sink ^= p[0] ^ p[nb - 1];
      if (!p)
        for (int64_t k = 0; k < sm_tensor_num_elements(out[i]); k++) {
          size_t l = 0;
          const char *e = sm_tensor_string(out[i], k, &l);
          if (e && l) sink ^= (uint8_t)(e[0] ^ e[l - 1]);
        }
    }
    (void)sink;
  }
  for (int i = 0; i < FEX_NOUT; i++) sm_tensor_free(out[i]);
  sm_tensor_free(in);
}

int FUZZ_EXAMPLE_ENTRY(const uint8_t *data, size_t size) {
  fex_init();
  const uint8_t *one[1] = {data};
  size_t l1[1] = {size};
  fex_run(one, l1, 1);
  if (size > 1) {
    size_t cut = 1 + data[0] % (size - 1);
    const uint8_t *two[2] = {data + 1, data + cut};
    size_t l2[2] = {cut - 1, size - cut};
    fex_run(two, l2, 2);
  }
  return 0;
}
