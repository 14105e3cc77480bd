/* tf_case_run.h - runs the kernel cases a tools/gen_*_cases.py generator wrote with TensorFlow's
 * answers (one op between Placeholders, as a MetaGraphDef with its OpDefs): builds the graph, feeds
 * the inputs the generator's formula makes, runs it and compares with TF's outputs or error.
 * Shared by test_ops_nn, test_ops_conv_transpose and test_ops_image; include it once, after the
 * generated header and after defining:
 *   TFC_CASE, TFC_INPUT, TFC_OUTPUT  the generated case types (nn_case, ... / im_case, ...)
 *   TFC_OPDEFS                        the generated op -> OpDef text table
 *   TFC_INPUT_VALUE(kind, seed, i, dtype), set_elem(t, i, v), get_elem(t, i)   the input formula
 *                                     and element access for the dtypes the cases use (or define
 *                                     TFC_NN_ELEMS for the nn generators' ones, nn_input_value)
 * It also gives metagraph(op, graph_def) and run_graph(...) to the test's own hand-built cases. */
#ifndef SM_TEST_TF_CASE_RUN_H
#define SM_TEST_TF_CASE_RUN_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TFC_NN_ELEMS /* the nn generators' formula and dtypes (float, double, int32, int64) */
static double nn_input_value(char kind, int seed, int64_t i, int dtype) {
  int64_t v = (i * 37 + seed * 11) % 19;
  v = kind == 's' ? v - 9 : v + 1;
  return dtype == SM_INT32 || dtype == SM_INT64 ? (double)v : (double)v / 8.0;
}

static void set_elem(sm_tensor *t, int64_t i, double v) {
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)sm_tensor_data(t))[i] = (float)v; break;
    case SM_DOUBLE: ((double *)sm_tensor_data(t))[i] = v; break;
    case SM_INT32: ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v; break;
    case SM_INT64: ((int64_t *)sm_tensor_data(t))[i] = (int64_t)v; break;
  }
}

static double get_elem(const sm_tensor *t, int64_t i) {
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)sm_tensor_data(t))[i];
    case SM_DOUBLE: return ((const double *)sm_tensor_data(t))[i];
    case SM_INT32: return ((const int32_t *)sm_tensor_data(t))[i];
    case SM_INT64: return (double)((const int64_t *)sm_tensor_data(t))[i];
  }
  return NAN;
}
#endif

static const char *opdefs_for(const char *op) {
  for (size_t i = 0; i < sizeof TFC_OPDEFS / sizeof *TFC_OPDEFS; i++)
    if (!strcmp(TFC_OPDEFS[i][0], op)) return TFC_OPDEFS[i][1];
  return "";
}

static char *metagraph(const char *op, const char *graph_def) {
  const char *ops = opdefs_for(op);
  size_t n = strlen(ops) + strlen(graph_def) + 128;
  char *s = malloc(n);
  snprintf(s, n, "meta_info_def { stripped_op_list { %s } } graph_def { %s }", ops, graph_def);
  return s;
}

/* |got - want| <= tol * (1 + |want|): relative for large values, absolute near zero. */
static int close_enough(double got, double want, double tol) {
  if (isnan(want)) return isnan(got);
  return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* Runs a session over `mg` feeding in0..in{n-1}, fetching y:k for each k; returns the status. */
static sm_status *run_graph(const char *mg, sm_tensor **ins, int nin, const int *fetch, int nfetch, sm_tensor **outs) {
  sm_session *s;
  sm_status *st = sm__session_from_pbtxt(mg, &s);
  if (st) return st;
  char fnames[8][16], onames[8][16];
  const char *feeds[8], *fetches[8];
  for (int i = 0; i < nin; i++) {
    snprintf(fnames[i], sizeof fnames[i], "in%d:0", i);
    feeds[i] = fnames[i];
  }
  for (int i = 0; i < nfetch; i++) {
    snprintf(onames[i], sizeof onames[i], "y:%d", fetch[i]);
    fetches[i] = onames[i];
  }
  st = sm__session_run(s, feeds, ins, nin, fetches, nfetch, NULL, 0, outs);
  sm__session_free(s);
  return st;
}

static void run_tf_case(const TFC_CASE *c) {
  sm_tensor *ins[5] = {0}, *outs[6] = {0};
  char *mg = metagraph(c->op, c->graph_def);
  int fetch[6];
  for (int i = 0; i < c->nin; i++) {
    const TFC_INPUT *in = &c->in[i];
    CHECK_OK(sm_tensor_new(in->dtype, in->rank, in->dims, &ins[i]));
    if (!ins[i]) goto out;
    for (int64_t e = 0; e < sm_tensor_num_elements(ins[i]); e++)
      set_elem(ins[i], e, in->lit ? in->lit[e] : TFC_INPUT_VALUE(in->kind, in->seed, e, in->dtype));
  }
  int nf = c->err ? 1 : c->nout;
  for (int k = 0; k < nf; k++) fetch[k] = c->err ? 0 : c->out[k].index;
  sm_status *st = run_graph(mg, ins, c->nin, fetch, nf, outs);
  if (c->err) {
    if (!st) {
      fprintf(stderr, "case %s: succeeded, expected error \"%s\"\n", c->name, c->err);
      sm_test_failures++;
    } else if (!strstr(sm_status_message(st), c->err)) {
      fprintf(stderr, "case %s: error \"%s\" lacks \"%s\"\n", c->name, sm_status_message(st), c->err);
      sm_test_failures++;
    }
    sm_status_free(st);
    goto out;
  }
  if (st) {
    fprintf(stderr, "case %s: %s\n", c->name, sm_status_message(st));
    sm_status_free(st);
    sm_test_failures++;
    goto out;
  }
  for (int k = 0; k < c->nout; k++) {
    const TFC_OUTPUT *o = &c->out[k];
    const sm_tensor *t = outs[k];
    int ok = sm_tensor_dtype(t) == o->dtype && sm_tensor_rank(t) == o->rank;
    for (int d = 0; ok && d < o->rank; d++) ok = sm_tensor_dims(t)[d] == o->dims[d];
    if (!ok) {
      char b1[128], b2[128];
      fprintf(stderr, "case %s output %d: got %s %s, want %s %s\n", c->name, o->index,
              sm_dtype_name(sm_tensor_dtype(t)), sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b1, sizeof b1),
              sm_dtype_name(o->dtype), sm_shape_str(o->rank, o->dims, b2, sizeof b2));
      sm_test_failures++;
      continue;
    }
    int bad = 0;
    double tol = o->dtype == SM_FLOAT ? 1e-5 : o->dtype == SM_DOUBLE ? 1e-12 : 0;
    for (int64_t e = 0; e < o->n; e++) {
      double g = get_elem(t, e), w = o->vals[e];
      if (!close_enough(g, w, tol)) {
        if (bad++ < 5) fprintf(stderr, "case %s output %d [%lld]: got %.9g, want %.9g\n", c->name, o->index, (long long)e, g, w);
      }
    }
    if (bad) sm_test_failures++;
  }
out:
  for (int i = 0; i < 5; i++) sm_tensor_free(ins[i]);
  for (int i = 0; i < 6; i++) sm_tensor_free(outs[i]);
  free(mg);
}

#endif
