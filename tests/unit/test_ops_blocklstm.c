/* test_ops_blocklstm.c - TensorFlow's fused LSTM / GRU block ops and their gradients (rnn_block.c:
 * LSTMBlockCell, BlockLSTM, BlockLSTMV2, GRUBlockCell, LSTMBlockCellGrad, BlockLSTMGrad,
 * BlockLSTMGradV2, GRUBlockCellGrad) against TensorFlow: the cases tools/gen_blocklstm_cases.py
 * generated (TF's outputs, or its error text); float within 1e-5 relative (of max(1, |want|)),
 * half within 4e-3 (TF rounds every intermediate to half, here they stay in float; measured: float
 * within 3e-7, half within 2e-3). The grad ops take up to 18 inputs, so the cases are the header's
 * bl_case and run here, not by run_case. By hand, what TF cannot answer (it aborts, reads out of
 * bounds or corrupts its heap): a wrong rank, seq_len_max beyond the time dimension or negative,
 * LSTMBlockCell's wci / wcf sizes, BlockLSTMGrad's gate shapes, the attribute / dtype checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "blocklstm_cases.h"
#include "tc_case_run.h"

/* half outputs: within tol * max(1, |want|) (TF's half arithmetic rounds each step) */
static int half_close(const sm_tensor *want, const sm_tensor *got, double tol) {
  if (sm_tensor_dtype(want) != sm_tensor_dtype(got) || sm_tensor_rank(want) != sm_tensor_rank(got)) return 0;
  for (int d = 0; d < sm_tensor_rank(want); d++)
    if (sm_tensor_dims(want)[d] != sm_tensor_dims(got)[d]) return 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(want); i++) {
    double w = tc_elem(want, i), v = tc_elem(got, i);
    if (!(fabs(w - v) <= tol * fmax(1, fabs(w)))) return 0;
  }
  return 1;
}

static int run_bl_case(const bl_case *c) {
  int before = sm_test_failures;
  sm_tensor *in[18] = {0}, *out[8] = {0};
  for (int i = 0; i < c->nin; i++)
    if (!(in[i] = make_tensor(&c->in[i]))) sm_test_failures++;
  if (sm_test_failures == before) {
    sm_status *st = run_node(c->node, c->nin, in, c->err ? 1 : c->nout, out);
    if (!c->err && !st && c->nout && c->out[0].dtype == SM_HALF) {
      for (int i = 0; i < c->nout; i++) {
        sm_tensor *want = make_tensor(&c->out[i]);
        if (!want || !out[i] || !half_close(want, out[i], 4e-3)) {
          fprintf(stderr, "case '%s': output %d differs\n", c->name, i);
          if (want) print_tensor("want", want);
          if (out[i]) print_tensor("got ", out[i]);
          sm_test_failures++;
        }
        sm_tensor_free(want);
      }
    } else {
      tc_check(c->name, c->err, st, c->nout, c->out, out);
    }
    sm_status_free(st);
  }
  for (int i = 0; i < 18; i++) sm_tensor_free(in[i]);
  for (int i = 0; i < 8; i++) sm_tensor_free(out[i]);
  return sm_test_failures != before;
}

static sm_tensor *filled(int dtype, int rank, const int64_t *dims, float v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dtype, rank, dims, &t));
  if (!t) return NULL;
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) {
    if (dtype == SM_FLOAT) ((float *)sm_tensor_data(t))[i] = v;
    else if (dtype == SM_INT64) ((int64_t *)sm_tensor_data(t))[i] = (int64_t)v;
  }
  return t;
}

#define FLOAT_T "attr { key: \"T\" value { type: DT_FLOAT } } "

/* BlockLSTM inputs for T steps, B 2, I 3, U 4 (seq_len_max given); wrong: which input gets
 * shape wdims (rank wr), -1 none. */
static void block_inputs(sm_tensor **in, int64_t seq, int64_t T, int wrong, int wr, const int64_t *wdims) {
  const int64_t B = 2, I = 3, U = 4;
  const int64_t sh[9][3] = {{0}, {T, B, I}, {B, U}, {B, U}, {I + U, 4 * U}, {U}, {U}, {U}, {4 * U}};
  const int rk[9] = {0, 3, 2, 2, 2, 1, 1, 1, 1};
  in[0] = filled(SM_INT64, 0, NULL, (float)seq);
  for (int k = 1; k < 9; k++) in[k] = k == wrong ? filled(SM_FLOAT, wr, wdims, 0.1f) : filled(SM_FLOAT, rk[k], sh[k], 0.1f);
}

static void expect_err(const char *node, int nin, sm_tensor **in, int nout, const char *needle) {
  sm_tensor *out[8] = {0};
  sm_status *st = run_node(node, nin, in, nout, out);
  CHECK(st != NULL);
  if (st && !strstr(sm_status_message(st), needle))
    fprintf(stderr, "error \"%s\" lacks \"%s\"\n", sm_status_message(st), needle), sm_test_failures++;
  sm_status_free(st);
  for (int i = 0; i < 8; i++) sm_tensor_free(out[i]);
  for (int i = 0; i < nin; i++) sm_tensor_free(in[i]), in[i] = NULL;
}

/* TF 2.21 aborts on these (CHECK failures); here they are clear errors. */
static void test_hand_errors(void) {
  sm_tensor *in[18] = {0};
  const char *blk = "op: \"BlockLSTM\" " FLOAT_T;
  block_inputs(in, 4, 3, -1, 0, NULL);
  expect_err(blk, 9, in, 7, "seq_len_max 4 is outside [0, 3]");
  block_inputs(in, -1, 3, -1, 0, NULL);
  expect_err(blk, 9, in, 7, "seq_len_max -1 is outside [0, 3]");
  block_inputs(in, 1LL << 40, 3, -1, 0, NULL);
  expect_err("op: \"BlockLSTMV2\" " FLOAT_T, 9, in, 7, "BlockLSTMV2: seq_len_max 1099511627776 is outside");
  block_inputs(in, 3, 3, 1, 2, (int64_t[]){2, 3});
  expect_err(blk, 9, in, 7, "BlockLSTM: x must be rank 3 but is rank 2");
  block_inputs(in, 3, 3, 2, 1, (int64_t[]){4});
  expect_err(blk, 9, in, 7, "BlockLSTM: cs_prev must be rank 2 but is rank 1");
  block_inputs(in, 3, 3, 4, 1, (int64_t[]){16});
  expect_err(blk, 9, in, 7, "BlockLSTM: w must be rank 2 but is rank 1");
  block_inputs(in, 3, 3, 7, 2, (int64_t[]){1, 4});
  expect_err(blk, 9, in, 7, "BlockLSTM: wco must be rank 1 but is rank 2");
  block_inputs(in, 3, 3, 8, 0, NULL);
  expect_err(blk, 9, in, 7, "BlockLSTM: b must be rank 1 but is rank 0");
  /* LSTMBlockCell: the same inputs less seq_len_max, x [2, 3] */
  block_inputs(in, 0, 3, 1, 2, (int64_t[]){2, 3});
  sm_tensor_free(in[0]);
  memmove(in, in + 1, 8 * sizeof *in);
  in[8] = NULL;
  sm_tensor_free(in[1]);
  in[1] = filled(SM_FLOAT, 3, (int64_t[]){1, 2, 4}, 0);
  expect_err("op: \"LSTMBlockCell\" " FLOAT_T, 8, in, 7, "LSTMBlockCell: cs_prev must be rank 2 but is rank 3");
  /* a grad without use_peephole (no default), and a dtype TF does not register */
  block_inputs(in, 3, 3, -1, 0, NULL);
  expect_err("op: \"BlockLSTM\" attr { key: \"T\" value { type: DT_DOUBLE } }", 9, in, 7, "half or float");
  sm_tensor *x = filled(SM_FLOAT, 2, (int64_t[]){1, 1}, 0);
  sm_tensor *one[1] = {x};
  expect_err("op: \"LSTMBlockCellGrad\" " FLOAT_T, 1, one, 5, "use_peephole");
  /* mixed dtypes */
  block_inputs(in, 3, 3, -1, 0, NULL);
  sm_tensor_free(in[5]);
  CHECK_OK(sm_tensor_new(SM_HALF, 1, (int64_t[]){4}, &in[5]));
  expect_err(blk, 9, in, 7, "BlockLSTM: input 5 is DT_HALF, expected DT_FLOAT");
  /* GRU: wrong rank */
  const int64_t gd[6][2] = {{2, 3}, {2, 4}, {7, 8}, {7, 4}, {8}, {4}};
  const int gr[6] = {2, 2, 2, 2, 1, 1};
  for (int k = 0; k < 6; k++) in[k] = filled(SM_FLOAT, gr[k], gd[k], 0.1f);
  sm_tensor_free(in[0]);
  in[0] = filled(SM_FLOAT, 3, (int64_t[]){2, 3, 1}, 0);
  expect_err("op: \"GRUBlockCell\" " FLOAT_T, 6, in, 4, "GRUBlockCell: x must be rank 2 but is rank 3");
  /* LSTMBlockCell: TF does not check wci / wcf (it reads past a short one) */
  block_inputs(in, 0, 3, 5, 1, (int64_t[]){3});
  sm_tensor_free(in[0]);
  memmove(in, in + 1, 8 * sizeof *in);
  in[8] = NULL;
  sm_tensor_free(in[0]);
  in[0] = filled(SM_FLOAT, 2, (int64_t[]){2, 3}, 0.1f);
  expect_err("op: \"LSTMBlockCell\" " FLOAT_T, 8, in, 7, "LSTMBlockCell: wci.dim_size(0) != cell_size: 3 vs. 4");
  /* BlockLSTMGrad: TF checks neither the gates' nor the incoming gradients' shapes (a wrong one
   * corrupts its heap); here each is checked against [T, B, U] */
  for (int wrong = 9; wrong < 18; wrong++) {
    block_inputs(in, 3, 3, -1, 0, NULL);
    for (int k = 9; k < 18; k++)
      in[k] = filled(SM_FLOAT, 3, k == wrong ? (int64_t[]){3, 2, 5} : (int64_t[]){3, 2, 4}, 0.1f);
    static const char *const gn[9] = {"i", "cs", "f", "o", "ci", "co", "h", "cs_grad", "h_grad"};
    char needle[80];
    snprintf(needle, sizeof needle, "BlockLSTMGrad: %s.dim_size(2) != cell_size: 5 vs. 4", gn[wrong - 9]);
    expect_err("op: \"BlockLSTMGrad\" " FLOAT_T "attr { key: \"use_peephole\" value { b: false } }", 18, in, 8, needle);
  }
  block_inputs(in, 3, 3, 2, 2, (int64_t[]){3, 4});
  for (int k = 9; k < 18; k++) in[k] = filled(SM_FLOAT, 3, (int64_t[]){3, 2, 4}, 0.1f);
  expect_err("op: \"BlockLSTMGradV2\" " FLOAT_T "attr { key: \"use_peephole\" value { b: true } }", 18, in, 8,
             "BlockLSTMGradV2: cs_prev.dims(0) != batch_size: 3 vs. 2");
  block_inputs(in, 3, 3, -1, 0, NULL);
  for (int k = 9; k < 18; k++) in[k] = filled(SM_FLOAT, k == 12 ? 2 : 3, (int64_t[]){3, 2, 4}, 0.1f);
  expect_err("op: \"BlockLSTMGrad\" " FLOAT_T "attr { key: \"use_peephole\" value { b: true } }", 18, in, 8,
             "BlockLSTMGrad: o must be rank 3 but is rank 2");
}

/* seq_len_max below T: every output of the later steps is zero, the earlier ones match a full run. */
static void test_seq_prefix(void) {
  sm_tensor *in[9] = {0}, *full[7] = {0}, *part[7] = {0};
  block_inputs(in, 3, 3, -1, 0, NULL);
  for (int k = 1; k < 9; k++)
    for (int64_t i = 0; in[k] && i < sm_tensor_num_elements(in[k]); i++)
      ((float *)sm_tensor_data(in[k]))[i] = (float)((i * 7 + k * 3) % 11) / 11.f - 0.5f;
  const char *node = "op: \"BlockLSTM\" " FLOAT_T "attr { key: \"use_peephole\" value { b: true } }";
  CHECK_OK(run_node(node, 9, in, 7, full));
  *(int64_t *)sm_tensor_data(in[0]) = 2;
  CHECK_OK(run_node(node, 9, in, 7, part));
  for (int k = 0; k < 7 && full[k] && part[k]; k++) {
    const float *a = sm_tensor_data(full[k]), *b = sm_tensor_data(part[k]);
    CHECK(!memcmp(a, b, 2 * 8 * sizeof(float)));
    for (int i = 16; i < 24; i++) CHECK(b[i] == 0.f);
  }
  for (int k = 0; k < 9; k++) sm_tensor_free(in[k]);
  for (int k = 0; k < 7; k++) sm_tensor_free(full[k]), sm_tensor_free(part[k]);
}

int main(void) {
  (void)run_case; /* its tc_case holds 8 inputs: the bl_case runner above is used */
  tc_tolerance = 1e-5;
  int bad = 0;
  size_t n = sizeof blocklstm_cases / sizeof *blocklstm_cases;
  for (size_t i = 0; i < n; i++) bad += run_bl_case(&blocklstm_cases[i]);
  printf("blocklstm: %zu cases, %d failed\n", n, bad);
  CHECK(bad == 0);
  test_hand_errors();
  test_seq_prefix();
  TEST_MAIN_END();
}
