/* test_ops_tftext_fast.c - TensorFlow Text's Fast WordPiece kernels (src/ops/tftext_fast.c):
 * TFText>FastWordpieceDetokenize against TF Text's own outputs (tests/unit/tftext_fast_cases.h,
 * made by tools/gen_tftext_fast_cases.py), and by hand what TF Text cannot answer: an id past the
 * vocabulary (TF Text 2.21 crashes on it), negative ids, bad row splits, wrong dtypes, and
 * truncated or corrupted model flatbuffers (a clear error, never an out-of-bounds read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "tftext_fast_cases.h"

static void konst(sm_graph *g, const char *name, sm_tensor *t) {
  CHECK_OK(sm_graph_const(g, name, t, NULL));
  sm_tensor_free(t);
}

static sm_tensor *vec(sm_dtype dt, int64_t n, const void *data, size_t elem) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dt, 1, &n, &t));
  if (n) memcpy(sm_tensor_data(t), data, (size_t)n * elem);
  return t;
}

static sm_tensor *scalar(sm_dtype dt) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dt, 0, NULL, &t));
  memset(sm_tensor_data(t), 0, sm_tensor_nbytes(t));
  return t;
}

/* Detokenize(ids, splits, model): the status; the output in *out. */
static sm_status *detok(sm_tensor *ids, sm_tensor *splits, sm_tensor *model, sm_tensor **out) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  konst(g, "ids", ids);
  konst(g, "sp", splits);
  konst(g, "m", model);
  sm_op *op = sm_op_begin(g, "TFText>FastWordpieceDetokenize", "op");
  sm_op_input(op, "ids");
  sm_op_input(op, "sp");
  sm_op_input(op, "m");
  CHECK_OK(sm_op_finish(op, NULL));
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_new(&mg, NULL, 1, &s));
  const char *f = "op:0";
  sm_status *st = sm__session_run(s, NULL, NULL, 0, &f, 1, NULL, 0, out);
  sm__session_free(s);
  sm_graph_free(g);
  return st;
}

static sm_status *detok_raw(const int *ids, int n, const long long *sp, int ns, const unsigned char *m, size_t mn,
                            sm_tensor **out) {
  int64_t sp64[16];
  for (int i = 0; i < ns; i++) sp64[i] = sp[i];
  return detok(vec(SM_INT32, n, ids, 4), vec(SM_INT64, ns, sp64, 8), vec(SM_UINT8, (int64_t)mn, m, 1), out);
}

static int expect_err(sm_status *s, const char *needle) {
  int ok = s && strstr(sm_status_message(s), needle);
  if (!ok) fprintf(stderr, "want error \"%s\", got \"%s\"\n", needle, s ? sm_status_message(s) : "OK");
  sm_status_free(s);
  return ok;
}

static void test_tf_cases(void) {
  for (size_t c = 0; c < sizeof fw_cases / sizeof fw_cases[0]; c++) {
    const fw_case *k = &fw_cases[c];
    sm_tensor *out = NULL;
    sm_status *s = detok_raw(k->ids, k->n_ids, k->splits, k->n_splits, k->model, k->model_len, &out);
    if (k->err) {
      if (!expect_err(s, k->err)) {
        fprintf(stderr, "case %s\n", k->name);
        CHECK(0);
      }
      continue;
    }
    if (s) fprintf(stderr, "case %s: %s\n", k->name, sm_status_message(s));
    CHECK(!s);
    sm_status_free(s);
    CHECK(out && sm_tensor_num_elements(out) == k->n_out);
    for (int i = 0; out && i < k->n_out && i < sm_tensor_num_elements(out); i++) {
      size_t len;
      const char *p = sm_tensor_string(out, i, &len);
      if (len != k->out_len[i] || memcmp(p, k->out[i], len)) {
        fprintf(stderr, "case %s row %d: got \"%.*s\"\n", k->name, i, (int)len, p);
        CHECK(0);
      }
    }
    sm_tensor_free(out);
  }
}

static void test_refusals(void) {
  const unsigned char *m = fw_model_basic;
  size_t mn = sizeof fw_model_basic;
  sm_tensor *out = NULL;
  const long long sp1[] = {0, 1}, sp_bad[] = {0, 2}, sp_down[] = {0, 1, 0}, sp_neg[] = {-1, 1};
  /* TF Text 2.21 segfaults on an id past the vocabulary; ours is an OutOfRange error */
  CHECK(expect_err(detok_raw((const int[]){8}, 1, sp1, 2, m, mn, &out), "Token ID out of bounds: 8"));
  CHECK(expect_err(detok_raw((const int[]){-1}, 1, sp1, 2, m, mn, &out), "Token ID out of bounds: -1"));
  CHECK(expect_err(detok_raw((const int[]){0}, 1, sp_bad, 2, m, mn, &out), "input_row_splits"));
  CHECK(expect_err(detok_raw((const int[]){0}, 1, sp_down, 3, m, mn, &out), "input_row_splits"));
  CHECK(expect_err(detok_raw((const int[]){0}, 1, sp_neg, 2, m, mn, &out), "input_row_splits"));
  /* wrong ranks (wrong dtypes are refused by the OpDef when the graph is built) */
  CHECK(expect_err(detok(scalar(SM_INT32), vec(SM_INT64, 2, (const int64_t[]){0, 0}, 8), vec(SM_UINT8, (int64_t)mn, m, 1), &out),
                   "input_values must be an int32 vector"));
  CHECK(expect_err(detok(vec(SM_INT32, 1, (const int[]){0}, 4), scalar(SM_INT64), vec(SM_UINT8, (int64_t)mn, m, 1), &out),
                   "input_row_splits must be an int64 vector"));
  CHECK(expect_err(detok(vec(SM_INT32, 1, (const int[]){0}, 4), vec(SM_INT64, 2, (const int64_t[]){0, 1}, 8), scalar(SM_UINT8), &out),
                   "wp_model must be a uint8 vector"));
  /* truncated models: a clear error or (when the needed fields survive) a result, never a bad read */
  int refused = 0;
  for (size_t cut = 0; cut < mn; cut += cut < 64 ? 1 : 37) {
    sm_status *s = detok_raw((const int[]){0, 2}, 2, (const long long[]){0, 2}, 2, m, cut, &out);
    if (s) refused++;
    sm_status_free(s);
    sm_tensor_free(out), out = NULL;
  }
  CHECK(refused > 0);
  /* corrupted bytes (every offset field flipped in turn): never a crash */
  unsigned char *bad = malloc(mn);
  CHECK(bad != NULL);
  for (size_t at = 0; bad && at < mn; at += at < 256 ? 1 : 53) {
    memcpy(bad, m, mn);
    bad[at] ^= 0xA5;
    sm_status *s = detok_raw((const int[]){0, 2, 7}, 3, (const long long[]){0, 3}, 2, bad, mn, &out);
    sm_status_free(s);
    sm_tensor_free(out), out = NULL;
  }
  free(bad);
}

int main(void) {
  test_tf_cases();
  test_refusals();
  TEST_MAIN_END();
}
