/* test_ops_einsum.c - Einsum against TensorFlow's answers (tf.einsum in TF 2.21 on
 * arange(n) * 0.5 - 1 inputs), MultiHeadAttention's two batched products at sizes where the
 * batched gemm paths run (oneDNN's strided batched matmul when it is on, the pool's sgemm calls
 * otherwise: the _nodnnl / SM_DNNL runs of ctest) against sums computed here in double, plus the
 * equations it must refuse. */
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

/* Element o of "aecd,abcd->acbe" (qk 1) or "acbe,aecd->abcd" (qk 0), summed in double; x, y the
 * operands, sizes a b c d e. */
static double mha_ref(int qk, const float *x, const float *y, const int64_t *n, int64_t o) {
  int64_t A = n[0], B = n[1], C = n[2], D = n[3], E = n[4];
  double sum = 0;
  (void)A;
  if (qk) { /* out [a, c, b, e] = sum_d x[a, e, c, d] y[a, b, c, d] */
    int64_t e = o % E, b = o / E % B, c = o / (E * B) % C, a = o / (E * B * C);
    for (int64_t d = 0; d < D; d++)
      sum += (double)x[((a * E + e) * C + c) * D + d] * (double)y[((a * B + b) * C + c) * D + d];
  } else { /* out [a, b, c, d] = sum_e x[a, c, b, e] y[a, e, c, d] */
    int64_t d = o % D, c = o / D % C, b = o / (D * C) % B, a = o / (D * C * B);
    for (int64_t e = 0; e < E; e++)
      sum += (double)x[((a * C + c) * B + b) * E + e] * (double)y[((a * E + e) * C + c) * D + d];
  }
  return sum;
}

static void check_mha(void) {
  const int64_t n[5] = {3, 17, 2, 5, 13}; /* a b c d e: batch, query length, heads, head size, key length */
  for (int qk = 1; qk >= 0; qk--) {
    const char *eq = qk ? "aecd,abcd->acbe" : "acbe,aecd->abcd";
    int64_t d0[4] = {n[0], qk ? n[4] : n[2], qk ? n[2] : n[1], qk ? n[3] : n[4]};
    int64_t d1[4] = {n[0], qk ? n[1] : n[4], n[2], n[3]};
    sm_session *s = NULL;
    CHECK_OK(session_for(eq, 2, &s));
    if (!s) continue;
    sm_tensor *in[2] = {arange(4, d0), arange(4, d1)}, *out = NULL;
    for (int t = 0; t < 2; t++) { /* values of both signs, not all multiples of 0.5 */
      float *v = sm_tensor_data(in[t]);
      for (int64_t i = 0; i < sm_tensor_num_elements(in[t]); i++) v[i] = (float)((i * 37 + t * 11) % 101) / 101.0f - 0.5f;
    }
    CHECK_OK(sm__session_run(s, (const char *[]){"a", "b"}, in, 2, (const char *[]){"e"}, 1, NULL, 0, &out));
    if (out) {
      int64_t want_n = n[0] * n[1] * n[2] * (qk ? n[4] : n[3]);
      CHECK(sm_tensor_num_elements(out) == want_n);
      const float *v = sm_tensor_data(out);
      double worst = 0;
      for (int64_t o = 0; o < want_n && o < sm_tensor_num_elements(out); o++) {
        double r = mha_ref(qk, sm_tensor_data(in[0]), sm_tensor_data(in[1]), n, o), d = fabs(v[o] - r);
        if (d > worst) worst = d;
      }
      if (worst > 1e-5) fprintf(stderr, "%s: worst |difference| %g\n", eq, worst);
      CHECK(worst <= 1e-5);
    }
    sm_tensor_free(out);
    sm_tensor_free(in[0]);
    sm_tensor_free(in[1]);
    sm__session_free(s);
  }
}

int main(void) {
  check_mha();
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
  const char *bad_prepare[][2] = {{"i.j,jk->ik", "outside an ellipsis"}, {"ij,jk->iz", "output label"},
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
              "Expected dimension 3 at axis 0 of the input shaped [2,2] but got dimension 2");
    sm_tensor_free(in[0]);
    sm_tensor_free(in[1]);
    sm__session_free(s);
  }
  TEST_MAIN_END();
}
