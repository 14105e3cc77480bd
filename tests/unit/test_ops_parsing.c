/* test_ops_parsing.c - ParseExample (v1) and ParseExampleV2 over serialized tf.Example: dense (fixed,
 * defaults, required, variable length), sparse and ragged keys, packed and unpacked lists, repeated
 * map keys, TF's error texts, and hostile bytes (every prefix and every bit flip of an example).
 * Expected values were computed with TensorFlow 2.21's tf.io.parse_example on the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.pb-c.h"
#include "runtime/session.h"
#include "test.h"

#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define SHAPE_ANY "attr { key: \"shape\" value { shape { unknown_rank: true } } } "
#define PH(name, t) "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", t) SHAPE_ANY "}\n"
#define SCONST(name, v) \
  "node { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", "DT_STRING") \
  "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape {} string_val: \"" v "\" } } } }\n"

static size_t unhex(const char *h, uint8_t *out) {
  size_t n = 0;
  for (; h[0] && h[1]; h += 2) {
    unsigned v;
    sscanf(h, "%2x", &v);
    out[n++] = (uint8_t)v;
  }
  return n;
}

static sm_tensor *ser_vec(int n, const char *const *hex) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++) {
    uint8_t buf[1024];
    size_t len = unhex(hex[i], buf);
    if (sm_tensor_set_string(t, i, buf, len)) abort();
  }
  return t;
}

static int str_is(const sm_tensor *t, int64_t i, const char *want) {
  size_t len;
  const char *p = sm_tensor_string(t, i, &len);
  return p && len == strlen(want) && !memcmp(p, want, len);
}

static int dims_are(const sm_tensor *t, int rank, const int64_t *d) {
  return sm_tensor_rank(t) == rank && (rank == 0 || !memcmp(sm_tensor_dims(t), d, (size_t)rank * sizeof *d));
}

static const float *F(const sm_tensor *t) { return sm_tensor_data(t); }
static const int64_t *I(const sm_tensor *t) { return sm_tensor_data(t); }

/* ---- v1: the half_plus_two parse (x required, x2 defaults to 0) ----------------------------- */
static const char *v1_graph =
    "graph_def {\n" PH("tf_example", "DT_STRING")
    "node { name: \"names\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 0 } } } } } }\n"
    SCONST("kx", "x") SCONST("kx2", "x2")
    "node { name: \"dx\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"dx2\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 0 } } } }\n"
    "node { name: \"ParseExample\" op: \"ParseExample\" input: \"tf_example\" input: \"names\" input: \"kx\" "
    "input: \"kx2\" input: \"dx\" input: \"dx2\" "
    "attr { key: \"Nsparse\" value { i: 0 } } attr { key: \"Ndense\" value { i: 2 } } "
    "attr { key: \"sparse_types\" value { list { } } } "
    "attr { key: \"Tdense\" value { list { type: DT_FLOAT type: DT_FLOAT } } } "
    "attr { key: \"dense_shapes\" value { list { shape { dim { size: 1 } } shape { dim { size: 1 } } } } } }\n"
    "node { name: \"x\" op: \"Identity\" input: \"ParseExample:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"x2\" op: \"Identity\" input: \"ParseExample:1\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "}\n";

/* The README's test vectors (tools/make_example.py, byte-identical to protobuf C++). */
static const char *EX[] = {"0a0f0a0d0a0178120812060a0400000000", "0a0f0a0d0a0178120812060a040000803f",
                           "0a0f0a0d0a0178120812060a0400000040", "0a0f0a0d0a0178120812060a0400004040"};
static const char *EX_X2_X2_5 = "0a1f0a0d0a0178120812060a04000000400a0e0a027832120812060a040000a040";
static const char *EX_NO_X = "0a100a0e0a027832120812060a040000a040";
/* x = 2.0 as one unpacked fixed32 value */
static const char *EX_UNPACKED = "0a0e0a0c0a0178120712050d00000040";
/* two map entries for x: 1.0 then 3.0 (the last wins) */
static const char *EX_REPEATED = "0a1e0a0d0a0178120812060a040000803f0a0d0a0178120812060a0400004040";

static sm_status *run_v1(sm_session *s, int n, const char *const *hex, sm_tensor **out) {
  sm_tensor *in = ser_vec(n, hex);
  sm_status *st =
      sm__session_run(s, (const char *[]){"tf_example"}, &in, 1, (const char *[]){"x", "x2"}, 2, NULL, 0, out);
  sm_tensor_free(in);
  return st;
}

static void test_v1(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(v1_graph, &s));
  if (!s) return;
  sm_tensor *o[2] = {0};
  CHECK_OK(run_v1(s, 4, EX, o));
  if (o[0]) {
    int64_t d[2] = {4, 1};
    CHECK(dims_are(o[0], 2, d) && dims_are(o[1], 2, d));
    for (int i = 0; i < 4; i++) CHECK(F(o[0])[i] == (float)i && F(o[1])[i] == 0);
    sm_tensor_free(o[0]);
    sm_tensor_free(o[1]);
  }
  const char *mix[] = {EX_X2_X2_5, EX_UNPACKED, EX_REPEATED};
  CHECK_OK(run_v1(s, 3, mix, o));
  if (o[0]) {
    CHECK(F(o[0])[0] == 2 && F(o[1])[0] == 5);
    CHECK(F(o[0])[1] == 2 && F(o[1])[1] == 0);
    CHECK(F(o[0])[2] == 3);
    sm_tensor_free(o[0]);
    sm_tensor_free(o[1]);
  }
  /* no examples at all: [0, 1] outputs */
  CHECK_OK(run_v1(s, 0, NULL, o));
  if (o[0]) {
    int64_t d[2] = {0, 1};
    CHECK(dims_are(o[0], 2, d));
    sm_tensor_free(o[0]);
    sm_tensor_free(o[1]);
  }
  const char *bad[] = {EX[0], EX_NO_X};
  CHECK_ERR(run_v1(s, 2, bad, o), "Name: <unknown>, Feature: x (data type: float) is required but could not be found.");
  CHECK_ERR(run_v1(s, 2, bad, o), "Index: 1");
  sm__session_free(s);
}

/* ---- v2: dense, variable-length, sparse and ragged keys ------------------------------------- */
static const char *v2_graph =
    "graph_def {\n" PH("ser", "DT_STRING")
    "node { name: \"names\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"sk\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: \"sp\" } } } }\n"
    "node { name: \"dk\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 4 } } string_val: \"f\" "
    "string_val: \"i\" string_val: \"s\" string_val: \"v\" } } } }\n"
    "node { name: \"rk\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: \"rg\" } } } }\n"
    "node { name: \"df\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"di\" op: \"Const\" " ATTR_T("dtype", "DT_INT64")
    "attr { key: \"value\" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"ds\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: \"d1\" "
    "string_val: \"d2\" } } } }\n"
    "node { name: \"dv\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: -1 } } } }\n"
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

/* Made by TensorFlow (tf.train.Example.SerializeToString) */
static const char *EX3[] = {
    ("0a730a160a016912111a0f0a0d07fdffffffffffffffff01ac020a0d0a017312080a060a0261620a000a190a0176121412120a1000008"
    "03f0000004000004040000080400a0c0a02737012061a040a0205060a0e0a027267120812060a040000003f0a110a0166120c120a0a08"
    "0000c03f00002040"),
    ("0a560a0c0a016912071a050a030001020a0e0a017312090a070a01780a02797a0a0b0a02737012051a030a01090a160a0272671210120"
    "e0a0c0000803f00000040000040400a110a0166120c120a0a08000080bf00000000"),
    "0a340a0c0a016912071a050a030101010a110a0176120c120a0a0800001041000000410a110a0166120c120a0a080000404000008040"};

#define NOUT 9
static const char *v2_fetch[NOUT] = {"p:0", "p:1", "p:2", "p:3", "p:4", "p:5", "p:6", "p:7", "p:8"};

static sm_status *run_v2(sm_session *s, sm_tensor *in, sm_tensor **out) {
  return sm__session_run(s, (const char *[]){"ser"}, &in, 1, v2_fetch, NOUT, NULL, 0, out);
}

static void free_outs(sm_tensor **o) {
  for (int i = 0; i < NOUT; i++) {
    sm_tensor_free(o[i]);
    o[i] = NULL;
  }
}

static void test_v2(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(v2_graph, &s));
  if (!s) return;
  sm_tensor *o[NOUT] = {0};
  sm_tensor *in = ser_vec(3, EX3);
  CHECK_OK(run_v2(s, in, o));
  sm_tensor_free(in);
  if (o[0]) {
    /* sp: indices [[0,0],[0,1],[1,0]], values [5,6,9], shape [3,2] */
    CHECK(dims_are(o[0], 2, (int64_t[]){3, 2}));
    static const int64_t idx[] = {0, 0, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++) CHECK(I(o[0])[i] == idx[i]);
    CHECK(I(o[1])[0] == 5 && I(o[1])[1] == 6 && I(o[1])[2] == 9);
    CHECK(I(o[2])[0] == 3 && I(o[2])[1] == 2);
    /* f */
    CHECK(dims_are(o[3], 2, (int64_t[]){3, 2}));
    static const float f[] = {1.5f, 2.5f, -1, 0, 3, 4};
    for (int i = 0; i < 6; i++) CHECK(F(o[3])[i] == f[i]);
    /* i */
    static const int64_t iv[] = {7, -3, 300, 0, 1, 2, 1, 1, 1};
    for (int k = 0; k < 9; k++) CHECK(I(o[4])[k] == iv[k]);
    /* s, with the default for the third example */
    static const char *sv[] = {"ab", "", "x", "yz", "d1", "d2"};
    for (int k = 0; k < 6; k++) CHECK(str_is(o[5], k, sv[k]));
    /* v: variable length [3, 2, 2], padded with -1 */
    CHECK(dims_are(o[6], 3, (int64_t[]){3, 2, 2}));
    static const float v[] = {1, 2, 3, 4, -1, -1, -1, -1, 9, 8, -1, -1};
    for (int k = 0; k < 12; k++) CHECK(F(o[6])[k] == v[k]);
    /* rg: values [0.5, 1, 2, 3], row_splits [0, 1, 4, 4] */
    CHECK(dims_are(o[7], 1, (int64_t[]){4}) && F(o[7])[0] == 0.5f && F(o[7])[3] == 3);
    CHECK(dims_are(o[8], 1, (int64_t[]){4}));
    static const int64_t rs[] = {0, 1, 4, 4};
    for (int k = 0; k < 4; k++) CHECK(I(o[8])[k] == rs[k]);
  }
  free_outs(o);
  /* a scalar input: no batch dimension; ragged values alone with empty row_splits, as TF */
  sm_tensor *one;
  CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &one));
  uint8_t buf[512];
  size_t len = unhex(EX3[0], buf);
  CHECK_OK(sm_tensor_set_string(one, 0, buf, len));
  sm_tensor *so[NOUT] = {0};
  CHECK_OK(sm__session_run(s, (const char *[]){"ser"}, &one, 1, v2_fetch, NOUT, NULL, 0, so));
  if (so[0]) {
    CHECK(dims_are(so[0], 2, (int64_t[]){2, 1}) && I(so[0])[0] == 0 && I(so[0])[1] == 1);
    CHECK(dims_are(so[2], 1, (int64_t[]){1}) && I(so[2])[0] == 2);
    CHECK(dims_are(so[3], 1, (int64_t[]){2}) && F(so[3])[1] == 2.5f);
    CHECK(dims_are(so[6], 2, (int64_t[]){2, 2}) && F(so[6])[3] == 4);
    CHECK(dims_are(so[7], 1, (int64_t[]){1}) && F(so[7])[0] == 0.5f);
    CHECK(dims_are(so[8], 1, (int64_t[]){0}));
  }
  free_outs(so);
  sm_tensor_free(one);
  sm__session_free(s);
}

/* ---- protobuf-c written examples, and TF's error texts ------------------------------------- */
static sm_tensor *pack_example(const char *key, int kind, const float *fv, const int64_t *iv, size_t n) {
  Tensorflow__FloatList fl = TENSORFLOW__FLOAT_LIST__INIT;
  Tensorflow__Int64List il = TENSORFLOW__INT64_LIST__INIT;
  Tensorflow__Feature feat = TENSORFLOW__FEATURE__INIT;
  if (kind == 2) {
    fl.n_value = n;
    fl.value = (float *)fv;
    feat.kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
    feat.float_list = &fl;
  } else {
    il.n_value = n;
    il.value = (int64_t *)iv;
    feat.kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
    feat.int64_list = &il;
  }
  Tensorflow__Features__FeatureEntry e = TENSORFLOW__FEATURES__FEATURE_ENTRY__INIT;
  e.key = (char *)key;
  e.value = &feat;
  Tensorflow__Features__FeatureEntry *ep = &e;
  Tensorflow__Features fs = TENSORFLOW__FEATURES__INIT;
  fs.n_feature = 1;
  fs.feature = &ep;
  Tensorflow__Example ex = TENSORFLOW__EXAMPLE__INIT;
  ex.features = &fs;
  size_t len = tensorflow__example__get_packed_size(&ex);
  uint8_t *buf = malloc(len + 1);
  tensorflow__example__pack(&ex, buf);
  sm_tensor *t;
  int64_t d = 1;
  if (sm_tensor_new(SM_STRING, 1, &d, &t) || sm_tensor_set_string(t, 0, buf, len)) abort();
  free(buf);
  return t;
}

static const char *f2_graph =
    "graph_def {\n" PH("ser", "DT_STRING")
    "node { name: \"names\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"empty\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"dk\" op: \"Const\" " ATTR_T("dtype", "DT_STRING")
    "attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: \"f\" } } } }\n"
    "node { name: \"df\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 0 } } } } } }\n"
    "node { name: \"p\" op: \"ParseExampleV2\" input: \"ser\" input: \"names\" input: \"empty\" input: \"dk\" "
    "input: \"empty\" input: \"df\" "
    "attr { key: \"num_sparse\" value { i: 0 } } attr { key: \"sparse_types\" value { list { } } } "
    "attr { key: \"Tdense\" value { list { type: DT_FLOAT } } } "
    "attr { key: \"ragged_value_types\" value { list { } } } attr { key: \"ragged_split_types\" value { list { } } } "
    "attr { key: \"dense_shapes\" value { list { shape { dim { size: 2 } } } } } }\n"
    "}\n";

static sm_status *run_f2(sm_session *s, sm_tensor *in, sm_tensor **o) {
  *o = NULL;
  return sm__session_run(s, (const char *[]){"ser"}, &in, 1, (const char *[]){"p:0"}, 1, NULL, 0, o);
}

static void test_errors_and_protobuf_c(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(f2_graph, &s));
  if (!s) return;
  sm_tensor *o, *in = pack_example("f", 2, (const float[]){0.25f, -8}, NULL, 2);
  CHECK_OK(run_f2(s, in, &o));
  if (o) CHECK(F(o)[0] == 0.25f && F(o)[1] == -8);
  sm_tensor_free(o);
  sm_tensor_free(in);
  in = pack_example("f", 2, (const float[]){1}, NULL, 1);
  CHECK_ERR(run_f2(s, in, &o),
            "Name: <unknown>, Key: f, Index: 0.  Number of float values != expected.  Values size: 1 but output "
            "shape: [2]");
  sm_tensor_free(in);
  in = pack_example("f", 3, NULL, (const int64_t[]){1, 2}, 2);
  CHECK_ERR(run_f2(s, in, &o),
            "Name: <unknown>, Key: f, Index: 0.  Data types don't match. Data type: int64 but expected type: float");
  sm_tensor_free(in);
  in = pack_example("g", 2, (const float[]){1, 2}, NULL, 2);
  CHECK_ERR(run_f2(s, in, &o), "Name: <unknown>, Feature: f (data type: float) is required but could not be found.");
  sm_tensor_free(in);
  in = ser_vec(1, (const char *[]){"0a050a"});
  CHECK_ERR(run_f2(s, in, &o), "Could not parse example input");
  sm_tensor_free(in);
  /* a rank-2 input is refused */
  sm_tensor *r2;
  int64_t d2[2] = {1, 1};
  CHECK_OK(sm_tensor_new(SM_STRING, 2, d2, &r2));
  CHECK_ERR(run_f2(s, r2, &o), "scalar or vector");
  sm_tensor_free(r2);
  sm__session_free(s);
}

/* ---- hostile bytes: every prefix and every single-bit flip ---------------------------------- */
static void test_hostile(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(v2_graph, &s));
  if (!s) return;
  uint8_t good[512], b[512];
  size_t n = unhex(EX3[0], good);
  int ok = 0, err = 0;
  sm_tensor *o[NOUT] = {0};
  int64_t one = 1;
  for (size_t cut = 0; cut <= n; cut++) {
    sm_tensor *in;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &in));
    CHECK_OK(sm_tensor_set_string(in, 0, good, cut));
    sm_status *st = run_v2(s, in, o);
    st ? err++ : ok++;
    sm_status_free(st);
    free_outs(o);
    sm_tensor_free(in);
  }
  for (size_t bit = 0; bit < n * 8; bit++) {
    memcpy(b, good, n);
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    sm_tensor *in;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &in));
    CHECK_OK(sm_tensor_set_string(in, 0, b, n));
    sm_status *st = run_v2(s, in, o);
    st ? err++ : ok++;
    sm_status_free(st);
    free_outs(o);
    sm_tensor_free(in);
  }
  /* absurd lengths and deep varints */
  static const char *weird[] = {"0affffffffffffffffff01", "0a8080808080808080808001", "0a0a0a080a00120412020a",
                                "0b", "0a040a020a00", "0a060a040a0012ff"};
  for (size_t i = 0; i < sizeof weird / sizeof *weird; i++) {
    sm_tensor *in = ser_vec(1, &weird[i]);
    sm_status *st = run_v2(s, in, o);
    st ? err++ : ok++;
    sm_status_free(st);
    free_outs(o);
    sm_tensor_free(in);
  }
  CHECK(err > 0 && ok > 0);
  sm__session_free(s);
}

int main(void) {
  test_v1();
  test_v2();
  test_errors_and_protobuf_c();
  test_hostile();
  TEST_MAIN_END();
}
