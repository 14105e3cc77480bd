/* test_ops_einsum.c - Einsum against TensorFlow's answers (tf.einsum in TF 2.21 on
 * arange(n) * 0.5 - 1 inputs), plus the equations it must refuse. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/session.h"
#include "test.h"

typedef struct {
  const char *eq;
  int nin;
  int64_t shape[2][4];
  int rank[2];
  int out_rank;
  int64_t out_shape[4];
  float want[16];
} ecase;

static const ecase cases[] = {
    {"ij,jk->ik", 2, {{2, 3}, {3, 2}}, {2, 2}, 2, {2, 2}, {1, 0.25, 1, 2.5}},
    {"ij->ji", 1, {{2, 3}, {0}}, {2, 0}, 2, {3, 2}, {-1, 0.5, -0.5, 1, 0, 1.5}},
    {"ii->i", 1, {{3, 3}, {0}}, {2, 0}, 1, {3}, {-1, 1, 3}},
    {"i,j->ij", 2, {{2}, {3}}, {1, 1}, 2, {2, 3}, {1, 0.5, 0, 0.5, 0.25, 0}},
    {"bij,bjk->bik", 2, {{2, 2, 3}, {2, 3, 2}}, {3, 3}, 3, {2, 2, 2}, {1, 0.25, 1, 2.5, 23.5, 27.25, 37, 43}},
    {"ij->", 1, {{2, 3}, {0}}, {2, 0}, 0, {0}, {1.5}},
    {"ij,jk", 2, {{2, 3}, {3, 2}}, {2, 2}, 2, {2, 2}, {1, 0.25, 1, 2.5}},
    {"nij,jk->nik", 2, {{2, 2, 3}, {3, 2}}, {3, 2}, 3, {2, 2, 2}, {1, 0.25, 1, 2.5, 1, 4.75, 1, 7}},
    /* matrix products in disguise (the gemm path): Keras EinsumDense / MultiHeadAttention's
     * equations, a transposed output (C^T = B^T A^T) and a transposed first operand */
    {"abc,cde->abde", 2, {{1, 2, 3}, {3, 2, 2}}, {3, 3}, 4, {1, 2, 2, 2}, {0.5, -0.25, -1, -1.75, 5, 6.5, 8, 9.5}},
    {"aecd,abcd->acbe", 2, {{2, 2, 2, 3}, {2, 2, 2, 3}}, {4, 4}, 4, {2, 2, 2, 2},
     {1.25, -3.25, -3.25, 19.25, 3.5, 12.5, 12.5, 48.5, 91.25, 140.75, 140.75, 217.25, 147.5, 210.5, 210.5, 300.5}},
    {"acbe,aecd->abcd", 2, {{1, 2, 2, 3}, {1, 3, 2, 2}}, {4, 4}, 4, {1, 2, 2, 2}, {0.5, -0.25, 17, 20.75, 5, 6.5, 26, 32}},
    {"abcd,cde->abe", 2, {{1, 2, 2, 2}, {2, 2, 2}}, {4, 3}, 3, {1, 2, 2}, {2, 1.5, 6, 9.5}},
    {"ij,kj->ki", 2, {{2, 3}, {2, 3}}, {2, 2}, 2, {2, 2}, {1.25, -1, -1, 3.5}},
    {"ji,jk->ik", 2, {{3, 2}, {3, 2}}, {2, 2}, 2, {2, 2}, {2, 2, 2, 2.75}},
};

static sm_status *session_for(const char *eq, int nin, sm_session **s) {
  char text[2048];
  snprintf(text, sizeof text,
           "graph_def {\n"
           "node { name: \"a\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "node { name: \"b\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "node { name: \"e\" op: \"Einsum\" input: \"a\" %s attr { key: \"equation\" value { s: \"%s\" } }"
           " attr { key: \"N\" value { i: %d } } attr { key: \"T\" value { type: DT_FLOAT } } }\n"
           "}\n",
           nin == 2 ? "input: \"b\"" : "", eq, nin);
  return sm__session_from_pbtxt(text, s);
}

static sm_tensor *arange(int rank, const int64_t *dims) {
  sm_tensor *t = NULL;
  if (sm_tensor_new(SM_FLOAT, rank, dims, &t)) return NULL;
  float *v = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) v[i] = (float)i * 0.5f - 1;
  return t;
}

int main(void) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const ecase *e = &cases[c];
    sm_session *s = NULL;
    CHECK_OK(session_for(e->eq, e->nin, &s));
    if (!s) continue;
    sm_tensor *in[2] = {arange(e->rank[0], e->shape[0]), e->nin == 2 ? arange(e->rank[1], e->shape[1]) : NULL};
    const char *names[2] = {"a", "b"};
    sm_tensor *out = NULL;
    CHECK_OK(sm__session_run(s, names, in, e->nin, (const char *[]){"e"}, 1, NULL, 0, &out));
    if (out) {
      CHECK(sm_tensor_rank(out) == e->out_rank);
      for (int i = 0; i < e->out_rank && i < sm_tensor_rank(out); i++) CHECK(sm_tensor_dims(out)[i] == e->out_shape[i]);
      const float *v = sm_tensor_data(out);
      for (int64_t i = 0; i < sm_tensor_num_elements(out) && i < 16; i++) {
        if (fabsf(v[i] - e->want[i]) > 1e-5f * (1 + fabsf(e->want[i]))) {
          fprintf(stderr, "%s: element %lld is %g, TF says %g\n", e->eq, (long long)i, v[i], e->want[i]);
          CHECK(0);
        }
      }
    }
    sm_tensor_free(out);
    sm_tensor_free(in[0]);
    sm_tensor_free(in[1]);
    sm__session_free(s);
  }

  /* Refused at load (prepare) or at run, with the equation in the message. */
  const char *bad_prepare[][2] = {{"...ij,jk->...ik", "ellipsis"}, {"ij,jk->iz", "output label"},
                                  {"ij,jk->ii", "repeated"},       {"i1,jk->ik", "invalid label"}};
  for (size_t i = 0; i < sizeof bad_prepare / sizeof *bad_prepare; i++) {
    sm_session *s = NULL;
    CHECK_OK(session_for(bad_prepare[i][0], 2, &s));
    if (!s) continue;
    CHECK_ERR(sm__session_prepare(s, (const char *[]){"a", "b"}, 2, (const char *[]){"e"}, 1, NULL, 0),
              bad_prepare[i][1]);
    sm__session_free(s);
  }
  sm_session *s = NULL;
  CHECK_OK(session_for("ij,jk->ik", 2, &s));
  if (s) {
    int64_t d23[2] = {2, 3}, d22[2] = {2, 2};
    sm_tensor *in[2] = {arange(2, d23), arange(2, d22)};
    sm_tensor *out = NULL;
    CHECK_ERR(sm__session_run(s, (const char *[]){"a", "b"}, in, 2, (const char *[]){"e"}, 1, NULL, 0, &out),
              "label 'j' has size 3 and 2");
    sm_tensor_free(in[0]);
    sm_tensor_free(in[1]);
    sm__session_free(s);
  }
  TEST_MAIN_END();
}
