/* tc_chain_run.h - chain cases and mutation runs over tc_case tables, shared by test_ops_c2 and
 * test_ops_csr: a chain case (tools/gen_c2_cases.py chain()) is a graph of several nodes,
 * "|"-separated, each naming its own inputs (placeholders i0.., nodes n0..), the last node's outputs
 * fetched; test_mutations runs every case again with one input mutated (garbage in, an error or an
 * answer out, never a crash). Include after tc_case_run.h (and test.h). */
#ifndef SM_TEST_TC_CHAIN_RUN_H
#define SM_TEST_TC_CHAIN_RUN_H
#include <stdint.h>

/* One chain case: the graph of its nodes n0..nK over placeholders i0.., nK's outputs fetched. */
static int run_chain(const tc_case *c) {
  int before = sm_test_failures, nodes = 0;
  sm_tensor *in[8] = {0}, *out[8] = {0};
  char *g = malloc(1 << 16), *spec = strdup(c->node);
  if (!g || !spec) {
    free(g), free(spec);
    sm_test_failures++;
    return 1;
  }
  size_t o = (size_t)snprintf(g, 1 << 16, "graph_def {\n");
  for (int i = 0; i < c->nin; i++) {
    if (!(in[i] = make_tensor(&c->in[i]))) sm_test_failures++;
    o += (size_t)snprintf(g + o, (1 << 16) - o, "node { name: \"i%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } }\n",
                          i, sm_dtype_name(c->in[i].dtype));
  }
  for (char *save = NULL, *n = strtok_r(spec, "|", &save); n; n = strtok_r(NULL, "|", &save))
    o += (size_t)snprintf(g + o, (1 << 16) - o, "node { name: \"n%d\" %s }\n", nodes++, n);
  snprintf(g + o, (1 << 16) - o, "}\n");
  sm_session *s = NULL;
  sm_status *st = sm_test_failures == before ? sm__session_from_pbtxt(g, &s) : NULL;
  if (!st && s) {
    char names[8][16], fnames[8][32];
    const char *feed[8], *fetch[8];
    for (int i = 0; i < c->nin; i++) snprintf(names[i], sizeof names[i], "i%d", i), feed[i] = names[i];
    int nout = c->err ? 1 : c->nout;
    for (int i = 0; i < nout; i++) snprintf(fnames[i], sizeof fnames[i], "n%d:%d", nodes - 1, i), fetch[i] = fnames[i];
    st = sm__session_run(s, feed, in, c->nin, fetch, nout, NULL, 0, out);
  }
  if (c->err) {
    if (!st) fprintf(stderr, "chain '%s': succeeded, expected error \"%s\"\n", c->name, c->err), sm_test_failures++;
    else if (!strstr(sm_status_message(st), c->err))
      fprintf(stderr, "chain '%s': error \"%s\" lacks \"%s\"\n", c->name, sm_status_message(st), c->err), sm_test_failures++;
  } else if (st) {
    fprintf(stderr, "chain '%s': failed: %s\n", c->name, sm_status_message(st));
    sm_test_failures++;
  } else {
    for (int i = 0; i < c->nout; i++) {
      sm_tensor *want = make_tensor(&c->out[i]);
      if (!want || !out[i] || !tc_match(want, out[i])) {
        fprintf(stderr, "chain '%s': output %d differs\n", c->name, i);
        if (want) print_tensor("want", want);
        if (out[i]) print_tensor("got ", out[i]);
        sm_test_failures++;
      }
      sm_tensor_free(want);
    }
  }
  sm_status_free(st);
  sm__session_free(s);
  for (int i = 0; i < 8; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]);
  free(g), free(spec);
  return sm_test_failures != before;
}

/* Garbage in, an error or an answer out, never a crash: every case (the chains too) run again with
 * one input mutated: an element set to -3..5, a huge or an extreme value, or the tensor reshaped
 * (flattened, a leading 1 added). Run under valgrind / ASan by make check. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}
static void mutate(sm_tensor **t) {
  int64_t n = sm_tensor_num_elements(*t);
  int dt = sm_tensor_dtype(*t);
  if (rnd() % 4 == 0 || !n || dt == SM_STRING) { /* another shape over the same elements */
    sm_tensor *v = NULL;
    int64_t dims[2] = {1, n};
    int flat = rnd() % 2;
    sm_status *st = sm_tensor_view(*t, flat ? 1 : 2, flat ? dims + 1 : dims, &v);
    if (!st) sm_tensor_free(*t), *t = v;
    sm_status_free(st);
    return;
  }
  static const int64_t extreme[] = {INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, 1LL << 40, -(1LL << 40)};
  int64_t i = (int64_t)(rnd() % (uint64_t)n), v = rnd() % 3 ? (int64_t)(rnd() % 9) - 3 : extreme[rnd() % 6];
  void *d = sm_tensor_data(*t);
  switch (dt) {
    case SM_INT64: ((int64_t *)d)[i] = v; break;
    case SM_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case SM_FLOAT: ((float *)d)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)d)[i] = (double)v; break;
    default: break;
  }
}
static void test_mutations(const char *label, const tc_case *cases, size_t n, int chain) {
  int ran = 0, refused = 0;
  for (size_t c = 0; c < n; c++)
    for (int iter = 0; iter < 12 && cases[c].nin; iter++) {
      tc_case m = cases[c];
      sm_tensor *in[8] = {0}, *out[8] = {0};
      int good = 1;
      for (int i = 0; i < m.nin; i++) good &= (in[i] = make_tensor(&m.in[i])) != NULL;
      if (!good) {
        for (int i = 0; i < 8; i++) sm_tensor_free(in[i]);
        continue;
      }
      mutate(&in[rnd() % (uint64_t)m.nin]);
      sm_status *st = NULL;
      if (chain) { /* the chain's graph, fed the mutated inputs */
        char *g = malloc(1 << 16), *spec = strdup(m.node);
        int nodes = 0;
        size_t o = g ? (size_t)snprintf(g, 1 << 16, "graph_def {\n") : 0;
        for (int i = 0; g && i < m.nin; i++)
          o += (size_t)snprintf(g + o, (1 << 16) - o, "node { name: \"i%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } }\n",
                                i, sm_dtype_name(m.in[i].dtype));
        for (char *save = NULL, *nd = g && spec ? strtok_r(spec, "|", &save) : NULL; nd; nd = strtok_r(NULL, "|", &save))
          o += (size_t)snprintf(g + o, (1 << 16) - o, "node { name: \"n%d\" %s }\n", nodes++, nd);
        sm_session *s = NULL;
        if (g) snprintf(g + o, (1 << 16) - o, "}\n");
        st = g && spec ? sm__session_from_pbtxt(g, &s) : sm_status_new(SM_NO_MEMORY, "test");
        if (!st) {
          char names[8][16], fname[32];
          const char *feed[8], *fetch[1] = {fname};
          for (int i = 0; i < m.nin; i++) snprintf(names[i], sizeof names[i], "i%d", i), feed[i] = names[i];
          snprintf(fname, sizeof fname, "n%d:0", nodes - 1);
          st = sm__session_run(s, feed, in, m.nin, fetch, 1, NULL, 0, out);
        }
        sm__session_free(s);
        free(g), free(spec);
      } else {
        st = run_node(m.node, m.nin, in, m.err ? 1 : m.nout, out);
      }
      if (st) refused++;
      else ran++;
      sm_status_free(st);
      for (int i = 0; i < 8; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]);
    }
  printf("%s mutations%s: %d ran, %d refused\n", label, chain ? " (chains)" : "", ran, refused);
  CHECK(ran > 0 && refused > 0);
}

#endif
