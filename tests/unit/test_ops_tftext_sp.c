/* test_ops_tftext_sp.c - TF Text's SentencePiece kernels (src/ops/tftext_sp.c) against TF Text's
 * own answers (tests/unit/tftext_sp_cases.h, tools/gen_tftext_sp_cases.py: a unigram and a BPE
 * model, tokenize / with offsets / as strings / detokenize under add_bos, add_eos, reverse;
 * vocab_size, id_to_string, string_to_id), plus by hand: sampling (nbest_size -1, alpha) gives
 * valid segmentations (each decodes as the best one does), return_nbest, a hostile `model` attr,
 * bad splits, ids outside the vocabulary, a handle that is not a SentencePiece model. Without the
 * module (libsavedmodel_sp.so) every op must say UNIMPLEMENTED naming SentencePiece. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "tftext_sp_cases.h"

static int have_sp = 1;

static sm_tensor *strings(int64_t n, const char *const *v, const size_t *lens) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &n, &t));
  for (int64_t i = 0; i < n; i++) CHECK_OK(sm_tensor_set_string(t, i, v[i], lens ? lens[i] : strlen(v[i])));
  return t;
}

static void konst(sm_graph *g, const char *name, sm_tensor *t) {
  CHECK_OK(sm_graph_const(g, name, t, NULL));
  sm_tensor_free(t);
}

static void kscalar(sm_graph *g, const char *name, int dtype, const void *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dtype, 0, NULL, &t));
  memcpy(sm_tensor_data(t), v, dtype == SM_BOOL ? 1 : 4);
  konst(g, name, t);
}

static sm_status *run(sm_graph *g, const char *const *fetch, int nf, sm_tensor **out) {
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_new(&mg, NULL, 1, &s));
  sm_status *st = sm__session_run(s, NULL, NULL, 0, fetch, nf, NULL, 0, out);
  sm__session_free(s);
  return st;
}

/* A graph with the model node "sp" and the option constants bos/eos/rev, nb (nbest), al (alpha). */
static sm_graph *base(const char *model, size_t mlen, int bos, int eos, int rev, int32_t nbest, float alpha) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  sm_op *op = sm_op_begin(g, "SentencepieceOp", "sp");
  sm_op_attr_string(op, "model", model, mlen);
  sm_op_attr_bool(op, "use_node_name_sharing", 1);
  CHECK_OK(sm_op_finish(op, NULL));
  uint8_t b = (uint8_t)bos, e = (uint8_t)eos, r = (uint8_t)rev;
  kscalar(g, "bos", SM_BOOL, &b);
  kscalar(g, "eos", SM_BOOL, &e);
  kscalar(g, "rev", SM_BOOL, &r);
  kscalar(g, "nb", SM_INT32, &nbest);
  kscalar(g, "al", SM_FLOAT, &alpha);
  return g;
}

static void tokenize_op(sm_graph *g, const char *name, const char *op_type, const char *x, int out_type, int tsplits,
                        int nbest) {
  sm_op *op = sm_op_begin(g, op_type, name);
  const char *in[] = {"sp", x, "nb", "al", "bos", "eos", "rev"};
  for (int i = 0; i < 7; i++) sm_op_input(op, in[i]);
  sm_op_attr_type(op, "out_type", out_type);
  sm_op_attr_type(op, "Tsplits", tsplits);
  if (nbest) sm_op_attr_bool(op, "return_nbest", 1);
  CHECK_OK(sm_op_finish(op, NULL));
}

static void detok_op(sm_graph *g, const char *name, const char *vals, const char *splits, int t, int tsplits) {
  sm_op *op = sm_op_begin(g, "SentencepieceDetokenizeOp", name);
  const char *in[] = {"sp", vals, splits, "bos", "eos", "rev"};
  for (int i = 0; i < 6; i++) sm_op_input(op, in[i]);
  sm_op_attr_type(op, "T", t);
  sm_op_attr_type(op, "Tsplits", tsplits);
  CHECK_OK(sm_op_finish(op, NULL));
}

static void check_strs(const sm_tensor *t, int64_t n, const char *const *v, const size_t *l) {
  CHECK(t && sm_tensor_dtype(t) == SM_STRING && sm_tensor_num_elements(t) == n);
  for (int64_t i = 0; t && i < n && i < sm_tensor_num_elements(t); i++) {
    size_t len;
    const char *p = sm_tensor_string(t, i, &len);
    if (len != l[i] || memcmp(p, v[i], len)) {
      fprintf(stderr, "string %lld: got \"%.*s\", want \"%.*s\"\n", (long long)i, (int)len, p, (int)l[i], v[i]);
      CHECK(0);
    }
  }
}

static void check_i64(const sm_tensor *t, int64_t n, const int64_t *want) {
  CHECK(t && sm_tensor_dtype(t) == SM_INT64 && sm_tensor_num_elements(t) == n);
  if (t && n && sm_tensor_num_elements(t) == n) CHECK(!memcmp(sm_tensor_data(t), want, (size_t)n * 8));
}

static void check_i32(const sm_tensor *t, int64_t n, const int32_t *want) {
  CHECK(t && sm_tensor_dtype(t) == SM_INT32 && sm_tensor_num_elements(t) == n);
  if (t && n && sm_tensor_num_elements(t) == n) CHECK(!memcmp(sm_tensor_data(t), want, (size_t)n * 4));
}

static void free_all(sm_tensor **o, int n) {
  for (int i = 0; i < n; i++) sm_tensor_free(o[i]), o[i] = NULL;
}

/* Every TF-recorded case: ids + offsets (int64 splits), pieces (int32 splits), detokenize. */
static void test_cases(void) {
  int ncases = (int)(sizeof sp_cases / sizeof sp_cases[0]);
  for (int c = 0; c < ncases; c++) {
    const sp_case *k = &sp_cases[c];
    sm_graph *g = base(sp_models[k->model], sp_model_len[k->model], k->bos, k->eos, k->rev, 0, 0.f);
    konst(g, "x", strings(k->n, k->in, NULL));
    tokenize_op(g, "tok", "SentencepieceTokenizeWithOffsetsOp", "x", SM_INT32, SM_INT64, 0);
    tokenize_op(g, "stok", "SentencepieceTokenizeOp", "x", SM_STRING, SM_INT32, 0);
    detok_op(g, "det", "tok:0", "tok:1", SM_INT32, SM_INT64);
    detok_op(g, "sdet", "stok:0", "stok:1", SM_STRING, SM_INT32);
    const char *f[] = {"tok:0", "tok:1", "tok:2", "tok:3", "stok:0", "stok:1", "det:0", "sdet:0"};
    sm_tensor *o[8] = {0};
    sm_status *s = run(g, f, 8, o);
    if (s && sm_status_code(s) == SM_UNIMPLEMENTED) {
      CHECK(strstr(sm_status_message(s), "SentencePiece") != NULL);
      sm_status_free(s);
      sm_graph_free(g);
      have_sp = 0;
      fprintf(stderr, "SentencePiece module not built: only the UNIMPLEMENTED path checked\n");
      return;
    }
    CHECK_OK(s);
    check_i32(o[0], k->nt, k->ids);
    check_i64(o[1], k->n + 1, k->splits);
    check_i64(o[2], k->nt, k->starts);
    check_i64(o[3], k->nt, k->limits);
    check_strs(o[4], k->nt, k->pieces, k->plen);
    CHECK(o[5] && sm_tensor_dtype(o[5]) == SM_INT32);
    for (int64_t i = 0; o[5] && i <= k->n; i++) CHECK(((const int32_t *)sm_tensor_data(o[5]))[i] == (int32_t)k->splits[i]);
    check_strs(o[6], k->n, k->detok, k->dlen);
    check_strs(o[7], k->n, k->sdetok, k->sdlen);
    free_all(o, 8);
    sm_graph_free(g);
  }
}

static void test_vocab(void) {
  for (int m = 0; have_sp && m < 2; m++) {
    const sp_vocab *v = &sp_vocabs[m];
    sm_graph *g = base(sp_models[m], sp_model_len[m], 0, 0, 0, 0, 0.f);
    sm_tensor *ids = NULL;
    int64_t n = v->size;
    CHECK_OK(sm_tensor_new(SM_INT32, 1, &n, &ids));
    for (int32_t i = 0; i < v->size; i++) ((int32_t *)sm_tensor_data(ids))[i] = i;
    konst(g, "ids", ids);
    konst(g, "probe", strings(v->nprobe, v->probe, v->prlen));
    sm_op *op = sm_op_begin(g, "SentencepieceVocabSizeOp", "vs");
    sm_op_input(op, "sp");
    CHECK_OK(sm_op_finish(op, NULL));
    op = sm_op_begin(g, "SentencepieceIdToStringOp", "i2s");
    sm_op_input(op, "sp");
    sm_op_input(op, "ids");
    CHECK_OK(sm_op_finish(op, NULL));
    op = sm_op_begin(g, "SentencepieceStringToIdOp", "s2i");
    sm_op_input(op, "sp");
    sm_op_input(op, "probe");
    CHECK_OK(sm_op_finish(op, NULL));
    const char *f[] = {"vs:0", "i2s:0", "s2i:0"};
    sm_tensor *o[3] = {0};
    CHECK_OK(run(g, f, 3, o));
    CHECK(o[0] && ((const int32_t *)sm_tensor_data(o[0]))[0] == v->size);
    check_strs(o[1], v->size, v->pieces, v->plen);
    check_i32(o[2], v->nprobe, v->probe_ids);
    free_all(o, 3);
    sm_graph_free(g);
    /* an id outside the vocabulary: refused (TF Text reads past the model's pieces) */
    g = base(sp_models[m], sp_model_len[m], 0, 0, 0, 0, 0.f);
    int32_t bad = v->size;
    kscalar(g, "bad", SM_INT32, &bad);
    op = sm_op_begin(g, "SentencepieceIdToStringOp", "i2s");
    sm_op_input(op, "sp");
    sm_op_input(op, "bad");
    CHECK_OK(sm_op_finish(op, NULL));
    const char *f1 = "i2s:0";
    CHECK_ERR(run(g, &f1, 1, o), "outside the vocabulary");
    sm_graph_free(g);
  }
}

/* Sampling: each sample is a segmentation that decodes as the best one does; return_nbest. */
static void test_sampling(void) {
  if (!have_sp) return;
  const sp_case *k = &sp_cases[0];
  sm_graph *g = base(sp_models[0], sp_model_len[0], 0, 0, 0, -1, 0.5f);
  konst(g, "x", strings(k->n, k->in, NULL));
  tokenize_op(g, "tok", "SentencepieceTokenizeOp", "x", SM_INT32, SM_INT64, 0);
  detok_op(g, "det", "tok:0", "tok:1", SM_INT32, SM_INT64);
  const char *f[] = {"det:0"};
  sm_tensor *o[1] = {0};
  for (int r = 0; r < 5; r++) {
    CHECK_OK(run(g, f, 1, o));
    check_strs(o[0], k->n, k->detok, k->dlen);
    free_all(o, 1);
  }
  sm_graph_free(g);
  /* return_nbest with nbest_size 3: up to 3 rows per input, each decoding to the input's text */
  g = base(sp_models[0], sp_model_len[0], 0, 0, 0, 3, 0.f);
  konst(g, "x", strings(1, k->in, NULL));
  tokenize_op(g, "tok", "SentencepieceTokenizeOp", "x", SM_INT32, SM_INT64, 1);
  detok_op(g, "det", "tok:0", "tok:1", SM_INT32, SM_INT64);
  CHECK_OK(run(g, f, 1, o));
  CHECK(o[0] && sm_tensor_num_elements(o[0]) >= 1 && sm_tensor_num_elements(o[0]) <= 3);
  for (int64_t i = 0; o[0] && i < sm_tensor_num_elements(o[0]); i++) {
    size_t len;
    const char *p = sm_tensor_string(o[0], i, &len);
    CHECK(len == k->dlen[0] && !memcmp(p, k->detok[0], len));
  }
  free_all(o, 1);
  sm_graph_free(g);
  /* return_nbest with nbest_size 0: TF Text's error */
  g = base(sp_models[0], sp_model_len[0], 0, 0, 0, 0, 0.f);
  konst(g, "x", strings(1, k->in, NULL));
  tokenize_op(g, "tok", "SentencepieceTokenizeOp", "x", SM_INT32, SM_INT64, 1);
  const char *f0 = "tok:0";
  CHECK_ERR(run(g, &f0, 1, o), "nbest_size must be >= 1");
  sm_graph_free(g);
}

/* Hostile inputs: a model attr that is no ModelProto (garbage, truncated, empty), bad splits,
 * nbest_size of the wrong length, a handle that is not a SentencePiece model. */
static void test_refusals(void) {
  const char *f = "vs:0";
  sm_tensor *o[1] = {0};
  const char *garbage = "\xff\xff\xff\xff not a model proto";
  const struct {
    const char *m;
    size_t len;
  } bad[] = {{garbage, strlen(garbage)}, {sp_model0, sp_model_len[0] / 2}, {"x", 0}};
  for (int i = 0; i < 3; i++) {
    sm_graph *g = base(bad[i].m, bad[i].len, 0, 0, 0, 0, 0.f);
    sm_op *op = sm_op_begin(g, "SentencepieceVocabSizeOp", "vs");
    sm_op_input(op, "sp");
    CHECK_OK(sm_op_finish(op, NULL));
    sm_status *s = run(g, &f, 1, o);
    CHECK(s != NULL);
    if (s) {
      const char *msg = sm_status_message(s);
      CHECK(strstr(msg, "SentencepieceOp") || strstr(msg, "SentencePiece"));
      sm_status_free(s);
    }
    free_all(o, 1);
    sm_graph_free(g);
  }
  if (!have_sp) return;
  /* splits past the values, decreasing, empty */
  const int64_t sp1[] = {0, 9}, sp2[] = {0, 2, 1}, sp3[] = {0};
  const struct {
    const int64_t *v;
    int64_t n;
    const char *want;
  } sc[] = {{sp1, 2, "do not match"}, {sp2, 3, "Invalid splits"}, {sp3, 0, "at least 1 element"}};
  for (int i = 0; i < 3; i++) {
    sm_graph *g = base(sp_model0, sp_model_len[0], 0, 0, 0, 0, 0.f);
    sm_tensor *v = NULL, *s = NULL;
    int64_t two = 2;
    CHECK_OK(sm_tensor_new(SM_INT32, 1, &two, &v));
    CHECK_OK(sm_tensor_new(SM_INT64, 1, &sc[i].n, &s));
    if (sc[i].n) memcpy(sm_tensor_data(s), sc[i].v, (size_t)sc[i].n * 8);
    konst(g, "v", v);
    konst(g, "s", s);
    detok_op(g, "det", "v", "s", SM_INT32, SM_INT64);
    const char *fd = "det:0";
    CHECK_ERR(run(g, &fd, 1, o), sc[i].want);
    free_all(o, 1);
    sm_graph_free(g);
  }
  /* nbest_size a vector of the wrong length */
  sm_graph *g = base(sp_model0, sp_model_len[0], 0, 0, 0, 0, 0.f);
  konst(g, "x", strings(2, (const char *const[]){"a", "b"}, NULL));
  sm_tensor *nb3 = NULL;
  int64_t three = 3;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &three, &nb3));
  konst(g, "nb3", nb3);
  sm_op *op = sm_op_begin(g, "SentencepieceTokenizeOp", "tok");
  const char *in[] = {"sp", "x", "nb3", "al", "bos", "eos", "rev"};
  for (int i = 0; i < 7; i++) sm_op_input(op, in[i]);
  CHECK_OK(sm_op_finish(op, NULL));
  const char *ft = "tok:0";
  CHECK_ERR(run(g, &ft, 1, o), "nbest_size must be a scalar or a vector");
  sm_graph_free(g);
  /* a handle that is a variable, not a SentencePiece model */
  CHECK_OK(sm_graph_new(&g));
  op = sm_op_begin(g, "VarHandleOp", "sp");
  sm_op_attr_type(op, "dtype", SM_FLOAT);
  sm_op_attr_shape(op, "shape", 0, NULL);
  sm_op_attr_string(op, "shared_name", "v", 1);
  CHECK_OK(sm_op_finish(op, NULL));
  op = sm_op_begin(g, "SentencepieceVocabSizeOp", "vs");
  sm_op_input(op, "sp");
  CHECK_OK(sm_op_finish(op, NULL));
  CHECK_ERR(run(g, &f, 1, o), "not a SentencePiece model");
  sm_graph_free(g);
}

int main(void) {
  test_cases();
  test_vocab();
  test_sampling();
  test_refusals();
  TEST_MAIN_END();
}
