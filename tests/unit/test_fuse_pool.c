/* test_fuse_pool.c - the Conv2D + BiasAdd (+ Relu) + MaxPool fusion: the nn rule (nn_fuse.c) that
 * the plan's graph rewrite (runtime/rewrite.c) runs emits one _FusedConv2D node with "MaxPool" in
 * its fused_ops, whose kernel (nn_conv.c) writes only the pooled output; it must equal what the
 * unfused nodes compute. The same graph is run twice: fetching the pool alone (all fused) and
 * fetching the Relu too (a fetched value is never fused away: the pool then runs on its own), and
 * the pooled output is also checked against a naive max over the Relu output here. Geometries cover the direct path (Cout >= 16, with and
 * without a channel tail), the im2col fallback (Cout < 16), VALID and SAME pools, strides above
 * the window, overlapping windows (not fused, still right), batch 1 and several images, NaN
 * inputs, the thread pool on and off, and a pool that cannot fit (error, no crash); on an AVX-512
 * CPU also the 2x2 / stride 2 pool taken in registers (nn_conv.c pool_block16) next to the pixels
 * it leaves to direct_pixel (SAME borders, channel tails). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

/* A tensor of dims filled with a hash of (index, seed) in [-1, 1): reproducible, no ties to speak of. */
static sm_tensor *filled(int rank, const int64_t *dims, uint32_t seed) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (!t) exit(1);
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    p[i] = (float)(((uint32_t)i * 2654435761u + seed * 40503u) >> 8) / 8388608.0f - 1.0f;
  return t;
}

typedef struct pcase {
  int64_t n, h, w, c, kh, kw, cout, csh, csw; /* input, filter, conv strides */
  const char *cpad;                           /* conv padding */
  int64_t ph, pw, psh, psw;                   /* pool window, strides */
  const char *ppad;                           /* pool padding */
  int relu, nan;
} pcase;

#define T_FLOAT "attr { key: \"T\" value { type: DT_FLOAT } }"
#define PH(name) \
  "node { name: \"" name "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } } "

static char *graph(const pcase *c) {
  char *g = malloc(4096);
  snprintf(g, 4096,
           "graph_def { " PH("x") PH("f") PH("bias")
           "node { name: \"c\" op: \"Conv2D\" input: \"x\" input: \"f\" " T_FLOAT
           " attr { key: \"strides\" value { list { i: 1 i: %lld i: %lld i: 1 } } }"
           " attr { key: \"padding\" value { s: \"%s\" } } } "
           "node { name: \"b\" op: \"BiasAdd\" input: \"c\" input: \"bias\" " T_FLOAT " } "
           "node { name: \"r\" op: \"%s\" input: \"b\" " T_FLOAT " } "
           "node { name: \"p\" op: \"MaxPool\" input: \"%s\" " T_FLOAT
           " attr { key: \"ksize\" value { list { i: 1 i: %lld i: %lld i: 1 } } }"
           " attr { key: \"strides\" value { list { i: 1 i: %lld i: %lld i: 1 } } }"
           " attr { key: \"padding\" value { s: \"%s\" } } } }",
           (long long)c->csh, (long long)c->csw, c->cpad, c->relu ? "Relu" : "Identity", c->relu ? "r" : "b",
           (long long)c->ph, (long long)c->pw, (long long)c->psh, (long long)c->psw, c->ppad);
  return g;
}

/* Naive MaxPool of r [n,h,w,c] (TF: windows clipped to the input, a NaN never wins). */
static void naive_pool(const pcase *pc, const sm_tensor *r, float *want, int64_t oh, int64_t ow) {
  const int64_t *d = sm_tensor_dims(r);
  const float *x = sm_tensor_data(r);
  int64_t H = d[1], W = d[2], C = d[3];
  int same = !strcmp(pc->ppad, "SAME");
  int64_t pt = same ? ((oh - 1) * pc->psh + pc->ph - H) / 2 : 0;
  int64_t pl = same ? ((ow - 1) * pc->psw + pc->pw - W) / 2 : 0;
  if (pt < 0) pt = 0;
  if (pl < 0) pl = 0;
  for (int64_t n = 0; n < d[0]; n++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t c = 0; c < C; c++) {
          float m = -FLT_MAX;
          for (int64_t a = i * pc->psh - pt; a < i * pc->psh - pt + pc->ph; a++)
            for (int64_t b = j * pc->psw - pl; b < j * pc->psw - pl + pc->pw; b++) {
              if (a < 0 || a >= H || b < 0 || b >= W) continue;
              float v = x[((n * H + a) * W + b) * C + c];
              if (v > m) m = v;
            }
          want[((n * oh + i) * ow + j) * C + c] = m;
        }
}

static int same_bits(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

static void run_case(const pcase *pc) {
  char label[160];
  snprintf(label, sizeof label, "n%lld %lldx%lldx%lld k%lld cout%lld pool %lldx%lld/%lldx%lld %s relu%d nan%d",
           (long long)pc->n, (long long)pc->h, (long long)pc->w, (long long)pc->c, (long long)pc->kh,
           (long long)pc->cout, (long long)pc->ph, (long long)pc->pw, (long long)pc->psh, (long long)pc->psw,
           pc->ppad, pc->relu, pc->nan);
  char *g = graph(pc);
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  free(g);
  if (!s) return;
  int64_t xd[4] = {pc->n, pc->h, pc->w, pc->c}, fd[4] = {pc->kh, pc->kw, pc->c, pc->cout}, bd[1] = {pc->cout};
  sm_tensor *feeds[3] = {filled(4, xd, 1), filled(4, fd, 2), filled(1, bd, 3)};
  if (pc->nan) {
    float *x = sm_tensor_data(feeds[0]);
    for (int64_t i = 0; i < sm_tensor_num_elements(feeds[0]); i += 7) x[i] = NAN;
  }
  const char *fn[3] = {"x", "f", "bias"};
  const char *fused_fetch[1] = {"p:0"}, *both_fetch[2] = {"p:0", "r:0"};
  sm_tensor *fused[1] = {NULL}, *both[2] = {NULL, NULL};
  CHECK_OK(sm__session_run(s, fn, feeds, 3, fused_fetch, 1, NULL, 0, fused));
  CHECK_OK(sm__session_run(s, fn, feeds, 3, both_fetch, 2, NULL, 0, both));
  if (fused[0] && both[0] && both[1]) {
    CHECK(sm_tensor_rank(fused[0]) == 4 && !memcmp(sm_tensor_dims(fused[0]), sm_tensor_dims(both[0]), 4 * sizeof(int64_t)));
    int64_t n = sm_tensor_num_elements(both[0]);
    const int64_t *od = sm_tensor_dims(both[0]);
    float *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    naive_pool(pc, both[1], want, od[1], od[2]);
    const float *a = sm_tensor_data(fused[0]), *b = sm_tensor_data(both[0]);
    int64_t bad = 0, bad_naive = 0;
    for (int64_t i = 0; i < n; i++) {
      bad += !same_bits(a[i], b[i]);
      bad_naive += !same_bits(a[i], want[i]);
    }
    if (bad || bad_naive) fprintf(stderr, "%s: %lld differ from unfused, %lld from naive\n", label, (long long)bad, (long long)bad_naive);
    CHECK(bad == 0);
    CHECK(bad_naive == 0);
    free(want);
  }
  for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  sm_tensor_free(fused[0]);
  sm_tensor_free(both[0]);
  sm_tensor_free(both[1]);
  sm__session_free(s);
}

int main(void) {
  static const pcase cases[] = {
      /* the seed CNN: 28x28x1, 3x3x32 VALID, relu, 2x2/2 VALID; batch 1 and 9 */
      {1, 28, 28, 1, 3, 3, 32, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
      {9, 28, 28, 1, 3, 3, 32, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
      /* odd conv output (27): the last row/column is dropped by VALID, kept by SAME */
      {3, 29, 29, 3, 3, 3, 16, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
      {3, 29, 29, 3, 3, 3, 16, 1, 1, "VALID", 2, 2, 2, 2, "SAME", 1, 0},
      /* channel tail past 16, SAME conv, strided conv, no Relu */
      {2, 17, 13, 2, 3, 3, 20, 1, 1, "SAME", 3, 3, 3, 3, "SAME", 1, 0},
      {2, 17, 13, 2, 3, 3, 24, 2, 1, "SAME", 2, 3, 2, 3, "VALID", 0, 0},
      /* stride above the window; window larger than the conv output */
      {2, 12, 12, 1, 3, 3, 16, 1, 1, "VALID", 2, 2, 3, 3, "VALID", 1, 0},
      {1, 6, 6, 1, 3, 3, 16, 1, 1, "VALID", 5, 5, 5, 5, "SAME", 1, 0},
      /* the 2x2 pool in registers (AVX-512 CPUs): 32 + 16 channels with SAME borders (those pooled
       * pixels the slow way) and an odd pooled width; 32 + a tail of 8, no Relu, NaNs; 16 channels
       * after a strided conv; 64 and 32 channels, SAME (corner pixels the slow way), NaNs */
      {2, 16, 19, 2, 3, 3, 48, 1, 1, "SAME", 2, 2, 2, 2, "VALID", 1, 0},
      {2, 20, 23, 1, 3, 3, 40, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 0, 1},
      {1, 30, 31, 3, 3, 3, 16, 2, 2, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
      {3, 14, 14, 1, 3, 3, 64, 1, 1, "SAME", 2, 2, 2, 2, "VALID", 1, 1},
      {1, 14, 14, 1, 3, 3, 32, 1, 1, "SAME", 2, 2, 2, 2, "VALID", 1, 1},
      {2, 15, 16, 1, 3, 3, 32, 1, 1, "VALID", 2, 2, 2, 2, "SAME", 1, 0}, /* 13x14: SAME pads the bottom only */
      /* overlapping windows (3x3/2): not fused, still right */
      {2, 15, 15, 1, 3, 3, 32, 1, 1, "VALID", 3, 3, 2, 2, "VALID", 1, 0},
      /* im2col fallback: Cout < 16, and a long patch (K > 64) */
      {2, 14, 14, 3, 3, 3, 8, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
      {2, 10, 10, 12, 3, 3, 32, 1, 1, "SAME", 2, 2, 2, 2, "VALID", 1, 0},
      /* NaN inputs: never win a max */
      {2, 28, 28, 1, 3, 3, 32, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 1},
      {2, 14, 14, 3, 3, 3, 8, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 0, 1},
      /* a window larger than the conv output: an empty VALID pool */
      {1, 6, 6, 1, 3, 3, 16, 1, 1, "VALID", 5, 5, 5, 5, "VALID", 1, 0},
      /* empty batch */
      {0, 28, 28, 1, 3, 3, 32, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);

  /* A conv window larger than the input: refused with TF's message, fused or not. */
  {
    pcase pc = {1, 1, 1, 1, 3, 3, 16, 1, 1, "VALID", 2, 2, 2, 2, "VALID", 1, 0};
    char *g = graph(&pc);
    sm_session *s = NULL;
    CHECK_OK(sm__session_from_pbtxt(g, &s));
    free(g);
    int64_t xd[4] = {1, 1, 1, 1}, fd[4] = {3, 3, 1, 16}, bd[1] = {16};
    sm_tensor *feeds[3] = {filled(4, xd, 1), filled(4, fd, 2), filled(1, bd, 3)};
    const char *fn[3] = {"x", "f", "bias"}, *fetch[1] = {"p:0"};
    sm_tensor *out[1] = {NULL};
    sm_status *st = sm__session_run(s, fn, feeds, 3, fetch, 1, NULL, 0, out);
    CHECK(st != NULL);
    if (st) {
      CHECK(strstr(sm_status_message(st), "negative") != NULL);
      sm_status_free(st);
    }
    for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
    sm_tensor_free(out[0]);
    sm__session_free(s);
  }
  TEST_MAIN_END();
}
