/* test_cuda.c - the CUDA kernels (src/ops/gpu, src/cuda) against the CPU's, one op at a time.
 *
 * Where the CUDA device cannot be opened (no module, no driver, no GPU: CI and development
 * machines) the same cases run through the CUDA kernels (src/ops/gpu) and the CUDA device
 * (src/runtime/gpu) over a module of host loops standing in for src/cuda (the smcu.h table, host
 * memory marked as device memory): placement, shapes, strides, padding and broadcasting are
 * checked that way, then the test says why it skips the GPU itself (exit 77). Where it can (tools/gpu_check.sh on the H200), each case runs
 * one graph twice, in a CPU session and in one placed on the GPU, on the same seeded inputs, and
 * checks that the op really ran on CUDA and that every output is the CPU's within 1e-4 x scale:
 * products with both transposes and a broadcast batch, convolutions (asymmetric SAME padding,
 * dilation, depthwise, fused bias + activation), elementwise ops with broadcasting, pools, the
 * spatial mean, softmax, batch norm, transpose, concat, pad, reshape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h"
#include "cuda_host_module.h"
#include "runtime/device.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

#define T_F " attr { key: \"T\" value { type: DT_FLOAT } }"
#define A_S(k, v) " attr { key: \"" k "\" value { s: \"" v "\" } }"
#define A_B(k, v) " attr { key: \"" k "\" value { b: " v " } }"
#define A_L(k, v) " attr { key: \"" k "\" value { list { " v " } } }"
#define ICONST(name, dim, vals)                                                                              \
  "node { name: \"" name "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: "   \
  "\"value\" value { tensor { dtype: DT_INT32 tensor_shape { " dim " } " vals " } } } }\n"

typedef struct gcase {
  const char *name, *nodes; /* nodes after the placeholders in0.. (float); the output is "y" */
  int nin;
  int rank[5];
  int64_t dims[5][4];
} gcase;

static const gcase cases[] = {
    {"MatMul", "node { name: \"y\" op: \"MatMul\" input: \"in0\" input: \"in1\"" T_F A_B("transpose_a", "false")
     A_B("transpose_b", "false") "}", 2, {2, 2}, {{5, 7}, {7, 3}}},
    {"MatMul tA tB", "node { name: \"y\" op: \"MatMul\" input: \"in0\" input: \"in1\"" T_F A_B("transpose_a", "true")
     A_B("transpose_b", "true") "}", 2, {2, 2}, {{7, 5}, {3, 7}}},
    {"BatchMatMulV2 broadcast", "node { name: \"y\" op: \"BatchMatMulV2\" input: \"in0\" input: \"in1\"" T_F
     A_B("adj_x", "false") A_B("adj_y", "true") "}", 2, {3, 2}, {{4, 5, 6}, {3, 6}}},
    {"Conv2D SAME s2", "node { name: \"y\" op: \"Conv2D\" input: \"in0\" input: \"in1\"" T_F A_S("padding", "SAME")
     A_L("strides", "i: 1 i: 2 i: 2 i: 1") "}", 2, {4, 4}, {{2, 8, 9, 3}, {3, 3, 3, 5}}},
    {"Conv2D VALID dilated", "node { name: \"y\" op: \"Conv2D\" input: \"in0\" input: \"in1\"" T_F
     A_S("padding", "VALID") A_L("strides", "i: 1 i: 1 i: 1 i: 1") A_L("dilations", "i: 1 i: 2 i: 2 i: 1") "}", 2,
     {4, 4}, {{1, 9, 9, 4}, {3, 3, 4, 6}}},
    {"DepthwiseConv2dNative", "node { name: \"y\" op: \"DepthwiseConv2dNative\" input: \"in0\" input: \"in1\"" T_F
     A_S("padding", "SAME") A_L("strides", "i: 1 i: 1 i: 1 i: 1") "}", 2, {4, 4}, {{2, 7, 6, 4}, {3, 3, 4, 2}}},
    {"Conv2D+BiasAdd+Relu (fused)", "node { name: \"c\" op: \"Conv2D\" input: \"in0\" input: \"in1\"" T_F
     A_S("padding", "SAME") A_L("strides", "i: 1 i: 1 i: 1 i: 1") "}\n node { name: \"b\" op: \"BiasAdd\" input: "
     "\"c\" input: \"in2\"" T_F "}\n node { name: \"y\" op: \"Relu\" input: \"b\"" T_F "}", 3, {4, 4, 1},
     {{2, 6, 6, 3}, {3, 3, 3, 8}, {8}}},
    {"Conv2D+BiasAdd+Relu+MaxPool (fused)", "node { name: \"c\" op: \"Conv2D\" input: \"in0\" input: \"in1\"" T_F
     A_S("padding", "VALID") A_L("strides", "i: 1 i: 1 i: 1 i: 1") "}\n node { name: \"b\" op: \"BiasAdd\" input: "
     "\"c\" input: \"in2\"" T_F "}\n node { name: \"r\" op: \"Relu\" input: \"b\"" T_F "}\n node { name: \"y\" op: "
     "\"MaxPool\" input: \"r\"" T_F A_S("padding", "VALID") A_L("ksize", "i: 1 i: 2 i: 2 i: 1")
     A_L("strides", "i: 1 i: 2 i: 2 i: 1") "}", 3, {4, 4, 1}, {{2, 9, 9, 2}, {3, 3, 2, 4}, {4}}},
    {"AddV2 broadcast", "node { name: \"y\" op: \"AddV2\" input: \"in0\" input: \"in1\"" T_F "}", 2, {3, 1},
     {{2, 3, 4}, {4}}},
    {"Mul broadcast both", "node { name: \"y\" op: \"Mul\" input: \"in0\" input: \"in1\"" T_F "}", 2, {3, 2},
     {{2, 1, 4}, {3, 1}}},
    {"Sub", "node { name: \"y\" op: \"Sub\" input: \"in0\" input: \"in1\"" T_F "}", 2, {2, 2}, {{3, 4}, {3, 4}}},
    {"Sigmoid(Tanh(Relu6(Elu)))", "node { name: \"e\" op: \"Elu\" input: \"in0\"" T_F "}\n node { name: \"r\" op: "
     "\"Relu6\" input: \"e\"" T_F "}\n node { name: \"t\" op: \"Tanh\" input: \"r\"" T_F "}\n node { name: \"y\" op: "
     "\"Sigmoid\" input: \"t\"" T_F "}", 1, {2}, {{6, 9}}},
    {"MaxPool SAME", "node { name: \"y\" op: \"MaxPool\" input: \"in0\"" T_F A_S("padding", "SAME")
     A_L("ksize", "i: 1 i: 3 i: 3 i: 1") A_L("strides", "i: 1 i: 2 i: 2 i: 1") "}", 1, {4}, {{2, 7, 8, 3}}},
    {"AvgPool SAME", "node { name: \"y\" op: \"AvgPool\" input: \"in0\"" T_F A_S("padding", "SAME")
     A_L("ksize", "i: 1 i: 3 i: 3 i: 1") A_L("strides", "i: 1 i: 2 i: 2 i: 1") "}", 1, {4}, {{2, 7, 8, 3}}},
    {"Mean [1,2]", ICONST("ax", "dim { size: 2 }", "int_val: 1 int_val: 2")
     "node { name: \"y\" op: \"Mean\" input: \"in0\" input: \"ax\"" T_F A_B("keep_dims", "false")
     " attr { key: \"Tidx\" value { type: DT_INT32 } } }", 1, {4}, {{3, 5, 6, 7}}},
    {"Softmax", "node { name: \"y\" op: \"Softmax\" input: \"in0\"" T_F "}", 1, {2}, {{4, 1000}}},
    {"FusedBatchNormV3", "node { name: \"y\" op: \"FusedBatchNormV3\" input: \"in0\" input: \"in1\" input: \"in2\" "
     "input: \"in3\" input: \"in4\"" T_F " attr { key: \"U\" value { type: DT_FLOAT } }" A_B("is_training", "false")
     " attr { key: \"epsilon\" value { f: 0.001 } } }", 5, {4, 1, 1, 1, 1}, {{2, 3, 4, 5}, {5}, {5}, {5}, {5}}},
    {"Transpose", ICONST("p", "dim { size: 4 }", "int_val: 0 int_val: 3 int_val: 1 int_val: 2")
     "node { name: \"y\" op: \"Transpose\" input: \"in0\" input: \"p\"" T_F
     " attr { key: \"Tperm\" value { type: DT_INT32 } } }", 1, {4}, {{2, 3, 4, 5}}},
    {"ConcatV2 axis -1", ICONST("ax", "", "int_val: -1")
     "node { name: \"y\" op: \"ConcatV2\" input: \"in0\" input: \"in1\" input: \"ax\"" T_F
     " attr { key: \"N\" value { i: 2 } } attr { key: \"Tidx\" value { type: DT_INT32 } } }", 2, {3, 3},
     {{2, 3, 4}, {2, 3, 5}}},
    {"Pad", ICONST("p", "dim { size: 2 } dim { size: 2 }", "int_val: 1 int_val: 2 int_val: 0 int_val: 3")
     "node { name: \"y\" op: \"Pad\" input: \"in0\" input: \"p\"" T_F
     " attr { key: \"Tpaddings\" value { type: DT_INT32 } } }", 1, {2}, {{3, 4}}},
    {"Reshape + Relu", ICONST("s", "dim { size: 2 }", "int_val: -1 int_val: 6")
     "node { name: \"r\" op: \"Reshape\" input: \"in0\" input: \"s\"" T_F
     " attr { key: \"Tshape\" value { type: DT_INT32 } } }\n node { name: \"y\" op: \"Relu\" input: \"r\"" T_F "}", 1,
     {3}, {{2, 3, 4}}},
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void run_case(const gcase *c, int have_gpu) {
  char g[8192];
  size_t n = (size_t)snprintf(g, sizeof g, "graph_def {\n");
  for (int i = 0; i < c->nin; i++)
    n += (size_t)snprintf(g + n, sizeof g - n,
                          "node { name: \"in%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n", i);
  snprintf(g + n, sizeof g - n, "%s\n}\n", c->nodes);
  sm_session *cpu = NULL, *gpu = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &cpu));
  CHECK_OK(sm__session_from_pbtxt(g, &gpu));
  if (!cpu || !gpu) {
    fprintf(stderr, "case '%s': graph does not parse\n", c->name);
    sm__session_free(cpu);
    sm__session_free(gpu);
    return;
  }
  if (have_gpu) sm__session_set_backend(gpu, SM_BACKEND_CUDA);
  const char *names[5] = {"in0", "in1", "in2", "in3", "in4"}, *fetch = "y";
  char *placed = NULL;
  CHECK_OK(sm__session_placement(cpu, names, c->nin, &fetch, 1, SM_BACKEND_CUDA, &placed));
  if (placed && (!strncmp(placed, "0 of", 4) || !strstr(placed, "nothing falls back"))) {
    fprintf(stderr, "case '%s': placement: %s\n", c->name, placed);
    sm_test_failures++;
  }
  free(placed);
  sm_tensor *in[5] = {0}, *want = NULL, *got = NULL;
  for (int i = 0; i < c->nin; i++) {
    CHECK_OK(sm_tensor_new(SM_FLOAT, c->rank[i], c->dims[i], &in[i]));
    float *p = sm_tensor_data(in[i]);
    int variance = !strcmp(c->name, "FusedBatchNormV3") && i == 4;
    for (int64_t k = 0; k < sm_tensor_num_elements(in[i]); k++) p[k] = variance ? 0.5f + fabsf(frand()) : 2 * frand();
  }
  const sm_plan *p = NULL;
  CHECK_OK(sm__session_plan(gpu, names, c->nin, &fetch, 1, NULL, 0, &p, NULL, NULL));
  if (have_gpu && p && p->ndevice == 0) {
    fprintf(stderr, "case '%s': nothing was placed on CUDA\n", c->name);
    sm_test_failures++;
  }
  CHECK_OK(sm__session_run(cpu, names, in, c->nin, &fetch, 1, NULL, 0, &want));
  sm_status *st = sm__session_run(gpu, names, in, c->nin, &fetch, 1, NULL, 0, &got);
  if (st) {
    fprintf(stderr, "case '%s': GPU run failed: %s\n", c->name, sm_status_message(st));
    sm_status_free(st);
    sm_test_failures++;
  } else if (want && got) {
    int ok = sm_tensor_rank(want) == sm_tensor_rank(got) &&
             !memcmp(sm_tensor_dims(want), sm_tensor_dims(got), (size_t)sm_tensor_rank(want) * sizeof(int64_t)) &&
             sm__tensor_space(got) == SM_MEM_HOST;
    const float *a = sm_tensor_data(want), *b = sm_tensor_data(got);
    double scale = 1, worst = 0;
    for (int64_t k = 0; ok && k < sm_tensor_num_elements(want); k++) scale = fmax(scale, fabs(a[k]));
    for (int64_t k = 0; ok && k < sm_tensor_num_elements(want); k++) worst = fmax(worst, fabs((double)a[k] - b[k]));
    if (!ok || !(worst <= 1e-4 * scale)) {
      fprintf(stderr, "case '%s': GPU output differs (shape %s, max |diff| %g, scale %g)\n", c->name,
              ok ? "same" : "differs", worst, scale);
      sm_test_failures++;
    } else {
      printf("ok %-30s max |diff| %.3g (scale %.3g)\n", c->name, worst, scale);
    }
  }
  sm_tensor_free(want);
  sm_tensor_free(got);
  for (int i = 0; i < c->nin; i++) sm_tensor_free(in[i]);
  sm__session_free(cpu);
  sm__session_free(gpu);
}

/* Zoo models end to end: loaded for the GPU and for the CPU, the same seeded inputs (unknown dims
 * 2), serving_default's outputs within 1e-4 x scale. */
static void run_model(const char *name) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/zoo/%s/model", SM_SOURCE_DIR, name);
  const char *tags[] = {"serve"};
  sm_load_options gpu_opts = {.device = SM_DEVICE_GPU};
  sm_model *cpu = NULL, *gpu = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &cpu));
  CHECK_OK(sm_model_load(dir, tags, 1, &gpu_opts, &gpu));
  const sm_tensor_info *ins = NULL, *outs = NULL;
  int nin = 0, nout = 0;
  if (cpu) CHECK_OK(sm_model_signature_inputs(cpu, "serving_default", &ins, &nin));
  if (cpu) CHECK_OK(sm_model_signature_outputs(cpu, "serving_default", &outs, &nout));
  if (!cpu || !gpu || !ins || !outs || nin > 4 || nout > 4) {
    fprintf(stderr, "model %s: not loaded\n", name);
    sm_test_failures++;
    sm_model_free(cpu);
    sm_model_free(gpu);
    return;
  }
  sm_tensor *in[4] = {0}, *want[4] = {0}, *got[4] = {0};
  const char *ia[4], *oa[4];
  for (int i = 0; i < nin; i++) {
    int64_t d[SM_MAX_RANK];
    for (int k = 0; k < ins[i].rank; k++) d[k] = ins[i].dims[k] < 0 ? 2 : ins[i].dims[k];
    CHECK_OK(sm_tensor_new(SM_FLOAT, ins[i].rank, d, &in[i]));
    for (int64_t k = 0; in[i] && k < sm_tensor_num_elements(in[i]); k++) ((float *)sm_tensor_data(in[i]))[k] = frand();
    ia[i] = ins[i].alias;
  }
  for (int i = 0; i < nout; i++) oa[i] = outs[i].alias;
  CHECK_OK(sm_model_run(cpu, "serving_default", ia, in, nin, oa, nout, want));
  CHECK_OK(sm_model_run(gpu, "serving_default", ia, in, nin, oa, nout, got));
  for (int i = 0; i < nout; i++) {
    if (!want[i] || !got[i] || sm_tensor_num_elements(want[i]) != sm_tensor_num_elements(got[i])) {
      sm_test_failures++;
      continue;
    }
    const float *a = sm_tensor_data(want[i]), *b = sm_tensor_data(got[i]);
    double scale = 1, worst = 0;
    for (int64_t k = 0; k < sm_tensor_num_elements(want[i]); k++)
      scale = fmax(scale, fabs(a[k])), worst = fmax(worst, fabs((double)a[k] - b[k]));
    if (!(worst <= 1e-4 * scale)) {
      fprintf(stderr, "model %s output %s: max |diff| %g over scale %g\n", name, oa[i], worst, scale);
      sm_test_failures++;
    } else {
      printf("ok model %-24s %-10s max |diff| %.3g (scale %.3g)\n", name, oa[i], worst, scale);
    }
  }
  for (int i = 0; i < 4; i++) sm_tensor_free(in[i]), sm_tensor_free(want[i]), sm_tensor_free(got[i]);
  sm_model_free(cpu);
  sm_model_free(gpu);
}

int main(void) {
  const sm_device *d;
  sm_status *st = sm__device_open(SM_BACKEND_CUDA, &d);
  if (st) { /* no GPU: the same cases through cuda_kernels.c and a module of host loops */
    printf("no CUDA device (%s): the CUDA kernels run over host loops instead\n", sm_status_message(st));
    CHECK_OK(sm__cuda_open_with(&host_module));
  }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i], 1);
  const char *models[] = {"keras_seed_cnn", "keras_conv", "keras_depthwise", "keras_batchnorm", "keras_pooling",
                          "keras_residual", "keras_mlp", "tf2_keras_cnn"};
  for (size_t i = 0; i < sizeof models / sizeof *models; i++) run_model(models[i]);
  if (st && !sm_test_failures) {
    printf("skipped: the GPU itself (no CUDA device)\n");
    sm_status_free(st);
    return 77;
  }
  sm_status_free(st);
  TEST_MAIN_END();
}
