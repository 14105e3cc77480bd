/* test_ops_e3.c - the optimizer update ops (train_apply.c) and the variable scatter ops
 * (scatter_resource.c) against TensorFlow: the cases of tools/gen_e3_cases.py (e3_cases.h). Each
 * case's variables (VarHandleOp, or VariableV2 for the ref forms) are assigned their initial values
 * in a first run; a second runs the op and reads the variables back (ReadVariableOp / Identity
 * after it), compared with TF's values (float and complex64 within 1e-5 relative, double 1e-12,
 * half 1e-2 and bfloat16 4e-2: TF rounds half after every operation, train_apply once) or TF's
 * error text. End to end: the SavedModels of tools/gen_e3_models.py (tests/fixtures/train_sig_opt/),
 * whose `train` signature steps a linear model with a TF1 optimizer (Adam, Momentum with Nesterov,
 * centered RMSProp, Adagrad, Ftrl), loaded with the C API and run 3 steps: the losses and the
 * variables after (signature `read`) against TF's, within 1e-4 relative. By hand: an uninitialized variable, a variable of another dtype, one variable passed
 * as two slots, and repeated runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "tc_case_run.h"
#include "e3_cases.h"

static int close_enough(const sm_tensor *want, const sm_tensor *got) {
  if (sm_tensor_equal(want, got)) return 1;
  int dt = sm_tensor_dtype(want);
  if (dt != sm_tensor_dtype(got) || sm_tensor_rank(want) != sm_tensor_rank(got)) return 0;
  for (int i = 0; i < sm_tensor_rank(want); i++)
    if (sm_tensor_dims(want)[i] != sm_tensor_dims(got)[i]) return 0;
  double tol = dt == SM_FLOAT || dt == SM_COMPLEX64 ? 1e-5
               : dt == SM_DOUBLE || dt == SM_COMPLEX128 ? 1e-12
               : dt == SM_HALF ? 1e-2
               : dt == SM_BFLOAT16 ? 4e-2 : 0;
  if (tol == 0) return 0;
  int64_t n = sm_tensor_num_elements(want) * (dt == SM_COMPLEX64 || dt == SM_COMPLEX128 ? 2 : 1);
  for (int64_t i = 0; i < n; i++) {
    double w = tc_component(want, i), g = tc_component(got, i);
    if (isnan(w) ? !isnan(g) : isinf(w) ? w != g : !(fabs(g - w) <= tol * fmax(1, fabs(w)))) return 0;
  }
  return 1;
}

#define GCAP 16384

/* The case's graph: variables v0.., placeholders i0.., assigns a0.., the op y, reads r0... */
static char *case_graph(const e3_case *c) {
  char *g = malloc(GCAP);
  if (!g) return NULL;
  size_t o = (size_t)snprintf(g, GCAP, "graph_def {\n");
#define P(...) o += (size_t)snprintf(g + o, o < GCAP ? GCAP - o : 0, __VA_ARGS__)
  for (int i = 0; i < c->nin; i++)
    P("node { name: \"i%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } }\n", i,
      sm_dtype_name(c->in[i].dtype));
  for (int i = 0; i < c->nvar; i++) {
    const char *t = sm_dtype_name(c->in[i].dtype);
    if (c->ref) {
      P("node { name: \"v%d\" op: \"VariableV2\" attr { key: \"dtype\" value { type: %s } } "
        "attr { key: \"shape\" value { shape {",
        i, t);
      for (int k = 0; k < c->in[i].rank; k++) P(" dim { size: %lld }", (long long)c->in[i].dims[k]);
      P(" } } } }\n");
      P("node { name: \"a%d\" op: \"Assign\" input: \"v%d\" input: \"i%d\" attr { key: \"T\" value { type: %s } } }\n", i,
        i, i, t);
      P("node { name: \"r%d\" op: \"Identity\" input: \"v%d\" input: \"^y\" attr { key: \"T\" value { type: %s } } }\n",
        i, i, t);
    } else {
      P("node { name: \"v%d\" op: \"VarHandleOp\" attr { key: \"dtype\" value { type: %s } } "
        "attr { key: \"shared_name\" value { s: \"v%d\" } } attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n",
        i, t, i);
      P("node { name: \"a%d\" op: \"AssignVariableOp\" input: \"v%d\" input: \"i%d\" "
        "attr { key: \"dtype\" value { type: %s } } }\n",
        i, i, i, t);
      P("node { name: \"r%d\" op: \"ReadVariableOp\" input: \"v%d\" input: \"^y\" "
        "attr { key: \"dtype\" value { type: %s } } }\n",
        i, i, t);
    }
  }
  P("node { name: \"y\" ");
  for (int i = 0; i < c->nin; i++) P("input: \"%c%d\" ", i < c->nvar ? 'v' : 'i', i);
  P("%s }\n}\n", c->node);
#undef P
  if (o >= GCAP) {
    free(g);
    return NULL;
  }
  return g;
}

static int run_e3_case(const e3_case *c) {
  int before = sm_test_failures;
  sm_tensor *in[12] = {0}, *out[8] = {0};
  sm_session *s = NULL;
  char *g = NULL;
  for (int i = 0; i < c->nin; i++)
    if (!(in[i] = make_tensor(&c->in[i]))) sm_test_failures++;
  if (sm_test_failures != before || !(g = case_graph(c))) {
    fprintf(stderr, "case '%s': cannot build its inputs or graph\n", c->name);
    sm_test_failures++;
    goto done;
  }
  sm_status *st = sm__session_from_pbtxt(g, &s);
  char names[3][12][16];
  const char *feeds[12], *fetch[12], *targets[12];
  for (int i = 0; i < c->nin; i++) {
    snprintf(names[0][i], 16, "i%d", i);
    feeds[i] = names[0][i];
  }
  for (int i = 0; i < c->nvar; i++) {
    snprintf(names[1][i], 16, "a%d", i);
    targets[i] = names[1][i];
    snprintf(names[2][i], 16, "r%d", i);
    fetch[i] = names[2][i];
  }
  for (int i = 0; i < c->nextra; i++) {
    snprintf(names[2][c->nvar + i], 16, "y:%d", i);
    fetch[c->nvar + i] = names[2][c->nvar + i];
  }
  if (!st) st = sm__session_run(s, feeds, in, c->nvar, NULL, 0, targets, c->nvar, NULL);
  if (st) {
    fprintf(stderr, "case '%s': setting the variables failed: %s\n", c->name, sm_status_message(st));
    sm_status_free(st);
    sm_test_failures++;
    goto done;
  }
  int nf = c->nvar + c->nextra;
  st = sm__session_run(s, feeds + c->nvar, in + c->nvar, c->nin - c->nvar, fetch, nf, NULL, 0, out);
  if (c->err) {
    tc_check(c->name, c->err, st, 0, NULL, out);
  } else if (st) {
    fprintf(stderr, "case '%s': failed: %s\n", c->name, sm_status_message(st));
    sm_test_failures++;
  } else {
    for (int i = 0; i < nf; i++) {
      sm_tensor *want = make_tensor(&c->out[i]);
      if (!want || !out[i] || !close_enough(want, out[i])) {
        fprintf(stderr, "case '%s': output %d differs\n", c->name, i);
        if (want) print_tensor("want", want);
        if (out[i]) print_tensor("got ", out[i]);
        sm_test_failures++;
      }
      sm_tensor_free(want);
    }
  }
  sm_status_free(st);
done:
  sm__session_free(s);
  free(g);
  for (int i = 0; i < 12; i++) sm_tensor_free(in[i]);
  for (int i = 0; i < 8; i++) sm_tensor_free(out[i]);
  return sm_test_failures != before;
}

/* ---- by hand ---------------------------------------------------------------------------------- */

#define VAR(n, t) \
  "node { name: \"" n "\" op: \"VarHandleOp\" attr { key: \"dtype\" value { type: " t " } } " \
  "attr { key: \"shared_name\" value { s: \"" n "\" } } attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"
#define PHF(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
#define ASSIGN(n, v, x) \
  "node { name: \"" n "\" op: \"AssignVariableOp\" input: \"" v "\" input: \"" x "\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
#define READ(n, v) \
  "node { name: \"" n "\" op: \"ReadVariableOp\" input: \"" v "\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"

static const char *hand_graph =
    "graph_def {\n" VAR("v", "DT_FLOAT") VAR("w", "DT_FLOAT") VAR("vi", "DT_INT32") PHF("x") PHF("lr") PHF("g")
    ASSIGN("init_v", "v", "x") ASSIGN("init_w", "w", "x") READ("read_v", "v") READ("read_w", "w")
    "node { name: \"gd\" op: \"ResourceApplyGradientDescent\" input: \"v\" input: \"lr\" input: \"g\" "
    "attr { key: \"T\" value { type: DT_FLOAT } } }\n"
    "node { name: \"gd_w\" op: \"ResourceApplyGradientDescent\" input: \"w\" input: \"lr\" input: \"g\" "
    "attr { key: \"T\" value { type: DT_FLOAT } } }\n"
    "node { name: \"gd_int\" op: \"ResourceApplyGradientDescent\" input: \"vi\" input: \"lr\" input: \"g\" "
    "attr { key: \"T\" value { type: DT_FLOAT } } }\n"
    "node { name: \"mom_alias\" op: \"ResourceApplyMomentum\" input: \"v\" input: \"v\" input: \"lr\" input: \"g\" "
    "input: \"lr\" attr { key: \"T\" value { type: DT_FLOAT } } }\n"
    "}\n";

static sm_tensor *fvec(int n, const float *v) {
  sm_tensor *t = NULL;
  int64_t d = n;
  if (sm_tensor_new(n < 0 ? SM_FLOAT : SM_FLOAT, n < 0 ? 0 : 1, &d, &t)) return NULL;
  memcpy(sm_tensor_data(t), v, (size_t)(n < 0 ? 1 : n) * sizeof(float));
  return t;
}

static void test_by_hand(void) {
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(hand_graph, &s));
  if (!s) return;
  static const float x[2] = {1, 2}, g2[2] = {0.5f, -1}, lr[1] = {0.1f};
  sm_tensor *tx = fvec(2, x), *tg = fvec(2, g2), *tl = fvec(-1, lr);
  sm_tensor *feeds[2] = {tl, tg};
  const char *fnames[2] = {"lr", "g"};
  /* uninitialized: a clear error naming the variable */
  sm_status *st = sm__session_run(s, fnames, feeds, 2, NULL, 0, (const char *[]){"gd"}, 1, NULL);
  CHECK(st && sm_status_code(st) == SM_FAILED_PRECONDITION && strstr(sm_status_message(st), "uninitialized"));
  sm_status_free(st);
  /* a variable of another dtype */
  st = sm__session_run(s, fnames, feeds, 2, NULL, 0, (const char *[]){"gd_int"}, 1, NULL);
  CHECK(st && strstr(sm_status_message(st), "has dtype") && strstr(sm_status_message(st), "INT32"));
  sm_status_free(st);
  CHECK_OK(sm__session_run(s, (const char *[]){"x"}, &tx, 1, NULL, 0, (const char *[]){"init_v", "init_w"}, 2, NULL));
  /* three runs: v = x - 3 * lr * g; w (the same value, another variable) untouched */
  for (int r = 0; r < 3; r++) CHECK_OK(sm__session_run(s, fnames, feeds, 2, NULL, 0, (const char *[]){"gd"}, 1, NULL));
  sm_tensor *o[2] = {0};
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"read_v", "read_w"}, 2, NULL, 0, o));
  if (o[0] && o[1]) {
    const float *v = sm_tensor_data(o[0]), *w = sm_tensor_data(o[1]);
    for (int i = 0; i < 2; i++) {
      float want = x[i];
      for (int r = 0; r < 3; r++) want -= g2[i] * lr[0];
      CHECK(fabsf(v[i] - want) < 1e-6f);
      CHECK(w[i] == x[i]);
    }
    CHECK(v[0] != x[0]); /* the value read before (x, fed) was not written in place */
  }
  sm_tensor_free(o[0]);
  sm_tensor_free(o[1]);
  /* one variable as var and accum: updates one copy, no crash and no deadlock */
  CHECK_OK(sm__session_run(s, fnames, feeds, 2, NULL, 0, (const char *[]){"mom_alias"}, 1, NULL));
  CHECK(x[0] == 1 && x[1] == 2);
  sm_tensor_free(tx);
  sm_tensor_free(tg);
  sm_tensor_free(tl);
  sm__session_free(s);
}

/* ---- end to end: a train signature with a TF1 optimizer ---------------------------------------- */

static int all_close(const sm_tensor *want, const sm_tensor *got, double tol) {
  if (!want || !got || sm_tensor_dtype(got) != SM_FLOAT || sm_tensor_num_elements(want) != sm_tensor_num_elements(got))
    return 0;
  const float *w = sm_tensor_data(want), *g = sm_tensor_data(got);
  for (int64_t i = 0; i < sm_tensor_num_elements(want); i++)
    if (!(fabs((double)g[i] - w[i]) <= tol * fmax(1, fabs(w[i])))) return 0;
  return 1;
}

static void test_train_signature(const char *name) {
  char dir[512], npz[600];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/train_sig_opt/%s", SM_SOURCE_DIR, name);
  snprintf(npz, sizeof npz, "%s/expected.npz", dir);
  sm_npz *z = NULL;
  sm_model *m = NULL;
  sm_tensor *x = NULL, *y = NULL, *loss = NULL, *w = NULL, *b = NULL, *out[2] = {0};
  CHECK_OK(sm_npz_open(npz, &z));
  if (!z) return;
  CHECK_OK(sm_npz_get(z, "x", &x));
  CHECK_OK(sm_npz_get(z, "y", &y));
  CHECK_OK(sm_npz_get(z, "loss", &loss));
  CHECK_OK(sm_npz_get(z, "w", &w));
  CHECK_OK(sm_npz_get(z, "b", &b));
  CHECK_OK(sm_model_load(dir, (const char *[]){"serve"}, 1, NULL, &m));
  for (int step = 0; m && loss && step < 3; step++) {
    sm_tensor *in[2] = {x, y};
    CHECK_OK(sm_model_run(m, "train", (const char *[]){"x", "y"}, in, 2, (const char *[]){"loss"}, 1, out));
    if (out[0]) {
      double want = ((const float *)sm_tensor_data(loss))[step], got = *(const float *)sm_tensor_data(out[0]);
      if (!(fabs(got - want) <= 1e-4 * fmax(1, fabs(want)))) {
        fprintf(stderr, "%s: step %d loss %.9g, TF %.9g\n", name, step, got, want);
        sm_test_failures++;
      }
    }
    sm_tensor_free(out[0]);
    out[0] = NULL;
  }
  if (m) {
    CHECK_OK(sm_model_run(m, "read", NULL, NULL, 0, (const char *[]){"w", "b"}, 2, out));
    if (!all_close(w, out[0], 1e-4) || !all_close(b, out[1], 1e-4)) {
      fprintf(stderr, "%s: variables after 3 steps differ from TF's\n", name);
      sm_test_failures++;
    }
  }
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm_model_free(m);
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_tensor_free(loss);
  sm_tensor_free(w);
  sm_tensor_free(b);
  sm_npz_free(z);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  (void)run_case; /* tc_case_run.h's, unused here */
  (void)run_node;
  int bad = 0, ran = 0;
  size_t n = sizeof e3_cases / sizeof *e3_cases;
  for (size_t i = 0; i < n; i++) {
    if (only && !strstr(e3_cases[i].name, only)) continue;
    ran++;
    bad += run_e3_case(&e3_cases[i]);
  }
  printf("e3: %d cases, %d failed\n", ran, bad);
  CHECK(bad == 0);
  test_by_hand();
  if (!only) {
    static const char *const models[] = {"adam", "momentum_nesterov", "rmsprop_centered", "adagrad", "ftrl"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) test_train_signature(models[i]);
  }
  TEST_MAIN_END();
}
