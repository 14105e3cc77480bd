/* fuzz_records.c - libFuzzer target: bytes as a serialized record through the parsers of
 * src/ops/json_example.c (DecodeJSONExample), src/ops/parsing.c (ParseSingleExample,
 * ParseSequenceExampleV2: context and feature-list sparse, dense and ragged keys) and src/ops/io_codec.c
 * (ParseTensor for several out_types, DecodeCompressed: raw, ZLIB, GZIP, ZSTD), one-node graphs as a
 * model holds them.
 *
 * The first byte picks the case (below), the rest is the record (seeds: tools/make_decode_seeds.py
 * writes fuzz/seeds/fuzz_records/, each seed's first byte naming its case).
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_RECORDS_ENTRY renamed. */
#include "fuzz_op.h"

#ifndef FUZZ_RECORDS_ENTRY
#define FUZZ_RECORDS_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_RECORDS_ENTRY(const uint8_t *data, size_t size);

#define FREC_KEYS(name, k) FOP_CONST(name, "DT_STRING", "tensor_shape { dim { size: 1 } } string_val: \"" k "\"")
#define FREC_LIST(k, body) "attr { key: \"" k "\" value { list { " body " } } } "
#define FREC_PARSE_TENSOR(t) {FOP_GRAPH(FOP_NODE("ParseTensor", "", FOP_T("out_type", t))), 1, NULL, NULL}
#define FREC_DECOMPRESS(c) {FOP_GRAPH(FOP_NODE("DecodeCompressed", "", FOP_S("compression_type", c))), 1, NULL, NULL}

static fop_case frec_cases[] = {
    /* 0 */ {FOP_GRAPH(FOP_NODE("DecodeJSONExample", "", "")), 1, NULL, NULL},
    /* 1 */
    {FOP_GRAPH(FOP_CONST("df", "DT_FLOAT", "tensor_shape { dim { size: 0 } }")
                   FOP_CONST("ds", "DT_STRING", "tensor_shape {} string_val: \"x\"")
                       FOP_CONST("dv", "DT_FLOAT", "tensor_shape {} float_val: -1")
                           FOP_NODE("ParseSingleExample", "input: \"df\" input: \"ds\" input: \"dv\"",
                                    FOP_I("num_sparse", 2) FREC_LIST("sparse_keys", "s: \"sp\" s: \"ss\"")
                                        FREC_LIST("sparse_types", "type: DT_INT64 type: DT_STRING")
                                            FREC_LIST("dense_keys", "s: \"f\" s: \"s\" s: \"v\"")
                                                FREC_LIST("Tdense", "type: DT_FLOAT type: DT_STRING type: DT_FLOAT")
                                                    FREC_LIST("dense_shapes", "shape { dim { size: 2 } } shape { } "
                                                                              "shape { dim { size: -1 } }"))),
     9, NULL, NULL},
    /* 2 */
    {FOP_GRAPH(FOP_CONST("name", "DT_STRING", "tensor_shape {} string_val: \"\"") FREC_KEYS("cs", "cs")
                   FREC_KEYS("cd", "cd") FREC_KEYS("cr", "cr") FREC_KEYS("fs", "fs") FREC_KEYS("fd", "fd")
                       FREC_KEYS("fr", "fr")
                           FOP_CONST("miss", "DT_BOOL", "tensor_shape { dim { size: 1 } } bool_val: true")
                               FOP_CONST("cdd", "DT_FLOAT", "tensor_shape { dim { size: 2 } } float_val: 7 float_val: 8")
                                   FOP_NODE("ParseSequenceExampleV2",
                                            "input: \"name\" input: \"cs\" input: \"cd\" input: \"cr\" input: \"fs\" "
                                            "input: \"fd\" input: \"fr\" input: \"miss\" input: \"cdd\"",
                                            FOP_I("Ncontext_sparse", 1) FREC_LIST("Tcontext_dense", "type: DT_FLOAT")
                                                FREC_LIST("context_sparse_types", "type: DT_INT64")
                                                    FREC_LIST("context_ragged_value_types", "type: DT_STRING")
                                                        FREC_LIST("context_ragged_split_types", "type: DT_INT64")
                                                            FREC_LIST("context_dense_shapes", "shape { dim { size: 2 } }")
                                                                FOP_I("Nfeature_list_sparse", 1) FOP_I("Nfeature_list_dense", 1)
                                                                    FREC_LIST("feature_list_dense_types", "type: DT_INT64")
                                                                        FREC_LIST("feature_list_sparse_types", "type: DT_STRING")
                                                                            FREC_LIST("feature_list_ragged_value_types",
                                                                                      "type: DT_FLOAT")
                                                                                FREC_LIST("feature_list_ragged_split_types",
                                                                                          "type: DT_INT32")
                                                                                    FREC_LIST("feature_list_dense_shapes",
                                                                                              "shape { dim { size: 2 } }"))),
     14, NULL, NULL},
    /* 3 */ FREC_PARSE_TENSOR("DT_FLOAT"),
    /* 4 */ FREC_PARSE_TENSOR("DT_STRING"),
    /* 5 */ FREC_PARSE_TENSOR("DT_INT64"),
    /* 6 */ FREC_PARSE_TENSOR("DT_BOOL"),
    /* 7 */ FREC_PARSE_TENSOR("DT_HALF"),
    /* 8 */ FREC_PARSE_TENSOR("DT_COMPLEX128"),
    /* 9 */ FREC_PARSE_TENSOR("DT_UINT8"),
    /* 10 */ FREC_DECOMPRESS(""),
    /* 11 */ FREC_DECOMPRESS("ZLIB"),
    /* 12 */ FREC_DECOMPRESS("GZIP"),
    /* 13 */ FREC_DECOMPRESS("ZSTD"),
};
#define FREC_N ((int)(sizeof frec_cases / sizeof frec_cases[0]))

static void frec_cleanup(void) { fop_free_cases(frec_cases, FREC_N); }

int FUZZ_RECORDS_ENTRY(const uint8_t *data, size_t size) {
  static int registered;
  if (!registered) registered = 1, atexit(frec_cleanup);
  if (size < 1) return 0;
  fop_run(&frec_cases[data[0] % FREC_N], "fuzz_records", data + 1, size - 1);
  return 0;
}
