/* test_placement.c - placing a plan on a device backend (plan.c, executor.c, device.h) without a GPU.
 *
 * A fake device stands in for CUDA: its "device memory" is host memory whose tensors are marked
 * SM_MEM_DEVICE, and it counts its uploads, downloads and runs. Fake kernels for MatMul, AddV2 and
 * Relu (registered here for SM_BACKEND_CUDA with sm__kernels_add) fail unless every input is in
 * the fake space, compute on the CPU, and mark their outputs as device tensors; the CPU kernels
 * fail on their own if given one (they would read device memory): so a run that succeeds proves
 * every copy is where the space changes. Checked: which steps run where, the copy slots the plan
 * places (exactly where the space changes, one per value and direction, shared by readers), feeds
 * uploaded, fetches downloaded, Const weights uploaded once across runs, a node whose op has no
 * device kernel and one whose device prepare refuses it (int32 Relu) falling back to the CPU,
 * outputs equal to a CPU-only session's, a device kernel's error naming the node, a CPU-only plan
 * untouched by placement, and a plan asked for a device nobody opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h"
#include "runtime/device.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

/* ---- the fake device -------------------------------------------------------------------------- */
static int n_up, n_down, n_begin, n_end, fail_add;

static sm_status *fk_begin(void *ctx, void **run) {
  (void)ctx;
  n_begin++;
  *run = &n_begin;
  return NULL;
}
static sm_status *fk_end(void *ctx, void *run) {
  (void)ctx;
  n_end += run == &n_begin;
  return NULL;
}
static sm_status *fk_upload(void *ctx, void *run, const sm_tensor *host, sm_tensor **out) {
  (void)ctx;
  if (run != &n_begin) return sm_status_new(SM_INTERNAL, "upload outside a run");
  if (sm__tensor_space(host) != SM_MEM_HOST) return sm_status_new(SM_INTERNAL, "upload of a device tensor");
  sm_status *st = sm_tensor_copy(host, out);
  if (!st) sm__tensor_set_space(*out, SM_MEM_DEVICE);
  n_up++;
  return st;
}
static sm_status *fk_download(void *ctx, void *run, const sm_tensor *dev, sm_tensor **out) {
  (void)ctx;
  if (run != &n_begin) return sm_status_new(SM_INTERNAL, "download outside a run");
  if (sm__tensor_space(dev) != SM_MEM_DEVICE) return sm_status_new(SM_INTERNAL, "download of a host tensor");
  sm_status *st = sm_tensor_new(sm_tensor_dtype(dev), sm_tensor_rank(dev), sm_tensor_dims(dev), out);
  if (!st) memcpy(sm_tensor_data(*out), sm_tensor_data(dev), sm_tensor_nbytes(dev));
  n_down++;
  return st;
}
static const sm_device fake = {"FAKE", NULL, fk_begin, fk_end, fk_upload, fk_download};

/* ---- fake kernels ------------------------------------------------------------------------------ */
static sm_status *dev_inputs(sm_kctx *c) {
  if (!sm__kctx_device_run(c)) return sm_status_new(SM_INTERNAL, "no device run context");
  for (int i = 0; i < sm__kctx_num_inputs(c); i++)
    if (sm__tensor_space(sm__kctx_input(c, i)) != SM_MEM_DEVICE)
      return sm_status_new(SM_INTERNAL, "input %d is not in device memory", i);
  return NULL;
}

static sm_status *fk_out(sm_kctx *c, int rank, const int64_t *dims, float **y) {
  sm_tensor *t;
  sm_status *st = sm__kctx_alloc_output(c, 0, SM_FLOAT, rank, dims, &t);
  if (st) return st;
  sm__tensor_set_space(t, SM_MEM_DEVICE);
  *y = sm_tensor_data(t);
  return NULL;
}

static sm_status *float_prepare(const sm_node *n, void **state) {
  *state = NULL;
  int dt;
  sm_status *st = sm__node_attr_type(n, "T", &dt);
  if (st) return st;
  return dt == SM_FLOAT ? NULL : sm_status_new(SM_UNIMPLEMENTED, "fake device: float only");
}

static sm_status *fk_matmul(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = dev_inputs(c);
  if (st) return st;
  const sm_tensor *a = sm__kctx_input(c, 0), *b = sm__kctx_input(c, 1);
  int64_t m = sm_tensor_dims(a)[0], k = sm_tensor_dims(a)[1], n = sm_tensor_dims(b)[1], d[2] = {m, n};
  float *y;
  if ((st = fk_out(c, 2, d, &y))) return st;
  const float *A = sm_tensor_data(a), *B = sm_tensor_data(b);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float s = 0;
      for (int64_t q = 0; q < k; q++) s += A[i * k + q] * B[q * n + j];
      y[i * n + j] = s;
    }
  return NULL;
}

static sm_status *fk_add(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = dev_inputs(c);
  if (st) return st;
  if (fail_add) return sm_status_new(SM_INTERNAL, "fakeLaunch: injected failure");
  const sm_tensor *a = sm__kctx_input(c, 0), *b = sm__kctx_input(c, 1);
  float *y;
  if ((st = fk_out(c, sm_tensor_rank(a), sm_tensor_dims(a), &y))) return st;
  const float *A = sm_tensor_data(a), *B = sm_tensor_data(b);
  for (int64_t i = 0; i < sm_tensor_num_elements(a); i++) y[i] = A[i] + B[i];
  return NULL;
}

static sm_status *fk_relu(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = dev_inputs(c);
  if (st) return st;
  const sm_tensor *a = sm__kctx_input(c, 0);
  float *y;
  if ((st = fk_out(c, sm_tensor_rank(a), sm_tensor_dims(a), &y))) return st;
  const float *A = sm_tensor_data(a);
  for (int64_t i = 0; i < sm_tensor_num_elements(a); i++) y[i] = A[i] > 0 ? A[i] : 0;
  return NULL;
}

static const sm_kernel fake_kernels[] = {
    {"AddV2", float_prepare, fk_add, NULL, 0},
    {"MatMul", float_prepare, fk_matmul, NULL, 0},
    {"Relu", float_prepare, fk_relu, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};

/* ---- graphs ------------------------------------------------------------------------------------ */
#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define PH(name, t)                                                                                    \
  "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", t)                                  \
  "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"
#define NODE2(name, op, a, b) \
  "node { name: \"" name "\" op: \"" op "\" input: \"" a "\" input: \"" b "\" " ATTR_T("T", "DT_FLOAT") "}\n"
#define NODE1(name, op, a, t) "node { name: \"" name "\" op: \"" op "\" input: \"" a "\" " ATTR_T("T", t) "}\n"

/* x @ w -> relu -> (neg on the CPU) -> add(neg, relu): copies up x, w, n; down r (shared by Neg
 * and the fetch), a. */
static const char *graph =
    "graph_def {\n" PH("x", "DT_FLOAT") PH("xi", "DT_INT32")
    "node { name: \"w\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } } "
    "float_val: 1 float_val: -2 float_val: 3 float_val: 0.5 } } } }\n"
    "node { name: \"m\" op: \"MatMul\" input: \"x\" input: \"w\" " ATTR_T("T", "DT_FLOAT")
    "attr { key: \"transpose_a\" value { b: false } } attr { key: \"transpose_b\" value { b: false } } }\n"
    NODE1("r", "Relu", "m", "DT_FLOAT") NODE1("n", "Neg", "r", "DT_FLOAT") NODE2("a", "AddV2", "n", "r")
    NODE1("ri", "Relu", "xi", "DT_INT32")
    "}\n";

static sm_tensor *mat(const float *v) {
  sm_tensor *t;
  int64_t d[2] = {2, 2};
  if (sm_tensor_new(SM_FLOAT, 2, d, &t)) abort();
  memcpy(sm_tensor_data(t), v, 4 * sizeof(float));
  return t;
}

static const sm_step *step_of(const sm_plan *p, const char *name) {
  for (int i = 0; i < p->nsteps; i++)
    if (!strcmp(sm__node_name(p->steps[i].node), name)) return &p->steps[i];
  return NULL;
}

static void test_placement(void) {
  sm_session *cpu, *dev;
  CHECK_OK(sm__session_from_pbtxt(graph, &cpu));
  CHECK_OK(sm__session_from_pbtxt(graph, &dev));
  if (!cpu || !dev) return;
  sm__session_set_backend(dev, SM_BACKEND_CUDA);
  const char *feeds[] = {"x"}, *fetches[] = {"a", "r"};
  const sm_plan *p;
  int fpos[2];
  CHECK_OK(sm__session_plan(dev, feeds, 1, fetches, 2, NULL, 0, &p, NULL, fpos));
  if (!p) return;
  CHECK(p->dev == &fake);
  CHECK_EQ_INT(step_of(p, "m")->backend, SM_BACKEND_CUDA);
  CHECK_EQ_INT(step_of(p, "r")->backend, SM_BACKEND_CUDA);
  CHECK_EQ_INT(step_of(p, "a")->backend, SM_BACKEND_CUDA);
  CHECK_EQ_INT(step_of(p, "n")->backend, SM_BACKEND_CPU); /* no device kernel: falls back */
  CHECK_EQ_INT(step_of(p, "w")->backend, SM_BACKEND_CPU);
  CHECK_EQ_INT(p->ndevice, 3);
  /* copies: up x, up w, down r, up n, down a; and where they are read */
  CHECK_EQ_INT(p->ncopies, 5);
  int ups = 0;
  for (int sl = p->nslots_values; sl < p->nslots; sl++) ups += p->xdir[sl];
  CHECK_EQ_INT(ups, 3);
  const sm_step *m = step_of(p, "m"), *n = step_of(p, "n"), *a = step_of(p, "a");
  CHECK(p->xsrc[m->in_slot[0]] >= 0 && p->xdir[m->in_slot[0]] == 1); /* the feed, uploaded */
  CHECK(p->xsrc[m->in_slot[1]] >= 0 && p->xcache[m->in_slot[1]]);    /* the weight, cached */
  CHECK(p->xsrc[n->in_slot[0]] >= 0 && p->xdir[n->in_slot[0]] == 0); /* relu, downloaded for Neg */
  CHECK(p->xsrc[a->in_slot[0]] >= 0 && p->xdir[a->in_slot[0]] == 1); /* neg, uploaded */
  CHECK_EQ_INT(p->xsrc[a->in_slot[1]], -1);                           /* relu, already there */
  CHECK_EQ_INT(p->fetch_slot[fpos[1]], n->in_slot[0]);                /* one download of r, shared */

  const float xv[4] = {1, 2, -3, 4};
  sm_tensor *x = mat(xv), *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL};
  CHECK_OK(sm__session_run(cpu, feeds, &x, 1, fetches, 2, NULL, 0, want));
  for (int run = 0; run < 2; run++) {
    n_up = n_down = n_begin = n_end = 0;
    CHECK_OK(sm__plan_run(p, sm__session_env(dev), &x, got, NULL));
    CHECK_EQ_INT(n_up, run == 0 ? 3 : 2); /* the weight once */
    CHECK_EQ_INT(n_down, 2);
    CHECK_EQ_INT(n_begin, 1);
    CHECK_EQ_INT(n_end, 1);
    for (int i = 0; i < 2; i++) {
      sm_tensor *o = got[fpos[i]];
      CHECK(o && sm__tensor_space(o) == SM_MEM_HOST);
      CHECK(o && want[i] && sm_tensor_equal(o, want[i]));
      sm_tensor_free(o);
    }
  }
  /* by name, as sm_session runs (a plan of its own, the same placement) */
  n_up = n_down = 0;
  CHECK_OK(sm__session_run(dev, feeds, &x, 1, fetches, 2, NULL, 0, got));
  CHECK(got[0] && want[0] && sm_tensor_equal(got[0], want[0]));
  CHECK(got[1] && want[1] && sm_tensor_equal(got[1], want[1]));
  for (int i = 0; i < 2; i++) sm_tensor_free(got[i]), sm_tensor_free(want[i]);

  /* a device kernel's failure names the node, and the run's device context is closed */
  fail_add = 1;
  n_begin = n_end = 0;
  CHECK_ERR(sm__plan_run(p, sm__session_env(dev), &x, got, NULL), "node 'a' (AddV2): fakeLaunch: injected failure");
  CHECK(!got[0] && !got[1]);
  CHECK_EQ_INT(n_begin, 1);
  CHECK_EQ_INT(n_end, 1);
  fail_add = 0;

  /* fetching the device value only: one download; feeding only into the CPU: no device run */
  const char *fr[] = {"r"};
  const sm_plan *pr;
  CHECK_OK(sm__session_plan(dev, feeds, 1, fr, 1, NULL, 0, &pr, NULL, NULL));
  if (pr) CHECK_EQ_INT(pr->ncopies, 3);
  sm_tensor_free(x);

  /* an int32 Relu: the device prepare refuses it, the CPU runs it, nothing is copied */
  const char *fi[] = {"xi"}, *foi[] = {"ri"};
  CHECK_OK(sm__session_plan(dev, fi, 1, foi, 1, NULL, 0, &pr, NULL, NULL));
  if (pr) {
    CHECK_EQ_INT(pr->steps[pr->nsteps - 1].backend, SM_BACKEND_CPU);
    CHECK_EQ_INT(pr->ncopies, 0);
    CHECK_EQ_INT(pr->ndevice, 0);
  }
  sm_tensor *xi, *oi = NULL;
  int64_t d = 3;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d, &xi));
  ((int32_t *)sm_tensor_data(xi))[0] = -5;
  ((int32_t *)sm_tensor_data(xi))[2] = 7;
  n_begin = 0;
  CHECK_OK(sm__session_run(dev, fi, &xi, 1, foi, 1, NULL, 0, &oi));
  CHECK(oi && ((int32_t *)sm_tensor_data(oi))[0] == 0 && ((int32_t *)sm_tensor_data(oi))[2] == 7);
  CHECK_EQ_INT(n_begin, 0);
  sm_tensor_free(oi);
  sm_tensor_free(xi);

  /* a CPU session's plan has no device and no copies */
  const sm_plan *pc;
  CHECK_OK(sm__session_plan(cpu, feeds, 1, fetches, 2, NULL, 0, &pc, NULL, NULL));
  if (pc) CHECK(!pc->dev && !pc->xsrc && pc->ncopies == 0 && pc->ndevice == 0);
  sm__session_free(cpu);
  sm__session_free(dev);
}

/* Device tensors: a view keeps the space; a copy refuses device memory. */
static void test_device_tensors(void) {
  const float v[4] = {1, 2, 3, 4};
  sm_tensor *t = mat(v), *view = NULL, *cp = NULL;
  sm__tensor_set_space(t, SM_MEM_DEVICE);
  int64_t d = 4;
  CHECK_OK(sm_tensor_view(t, 1, &d, &view));
  CHECK(view && sm__tensor_space(view) == SM_MEM_DEVICE);
  CHECK_ERR(sm_tensor_copy(t, &cp), "device memory");
  CHECK(!cp);
  sm_tensor_free(view);
  sm_tensor_free(t);
}

int main(void) {
  /* before the fake registers: a plan cannot be placed on a device nobody opened */
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(graph, &s));
  if (s) {
    sm_plan_spec spec = {0};
    sm_plan *p = NULL;
    CHECK_ERR(sm__plan_build_on(sm__session_graph(s), &spec, SM_BACKEND_CUDA, &p), "the CUDA device is not open");
    sm__session_free(s);
  }
  CHECK_OK(sm__kernels_add(fake_kernels, SM_BACKEND_CUDA));
  CHECK_OK(sm__device_register(SM_BACKEND_CUDA, &fake));
  CHECK_ERR(sm__device_register(SM_BACKEND_CUDA, &fake), "has a device already");
  const sm_device *dv;
  CHECK_OK(sm__device_open(SM_BACKEND_CUDA, &dv));
  CHECK(dv == &fake);
  test_placement();
  test_device_tensors();
  TEST_MAIN_END();
}
