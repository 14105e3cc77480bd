/* fuzz_saved_model.c - libFuzzer target: binary saved_model.pb bytes through the parser.
 *
 * Parses, looks up every MetaGraph by its own tag set and by a few fixed ones, prints the model as
 * text, and packs it again: the packed form must parse and pack to the same bytes (a fixed point),
 * or the writer and the reader disagree. tests/unit/test_fuzz_regressions.c includes this file
 * with FUZZ_SAVED_MODEL_ENTRY renamed to replay saved crashes in the normal build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/format.h"
#include "savedmodel/pbtxt.h"

#ifndef FUZZ_SAVED_MODEL_ENTRY
#define FUZZ_SAVED_MODEL_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_SAVED_MODEL_ENTRY(const uint8_t *data, size_t size);

static void fsm_lookup(const Tensorflow__SavedModel *sm, const char *const *tags, size_t n) {
  const Tensorflow__MetaGraphDef *mg = NULL;
  sm_status_free(sm_saved_model_find_meta_graph(sm, tags, n, &mg));
}

int FUZZ_SAVED_MODEL_ENTRY(const uint8_t *data, size_t size) {
  Tensorflow__SavedModel *sm = NULL;
  sm_status *s = sm_saved_model_parse(data, size, "fuzz/saved_model.pb", &sm);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  static const char *const serve[] = {"serve"}, *const serve_gpu[] = {"serve", "gpu"},
                           *const train[] = {"train", "serve", "serve"};
  fsm_lookup(sm, NULL, 0);
  fsm_lookup(sm, serve, 1);
  fsm_lookup(sm, serve_gpu, 2);
  fsm_lookup(sm, train, 3);
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    const Tensorflow__MetaGraphDef *m = sm->meta_graphs[i];
    const Tensorflow__MetaGraphDef *found = NULL;
    const char *const *tags = NULL;
    size_t ntags = 0;
    if (m && m->meta_info_def) {
      tags = (const char *const *)m->meta_info_def->tags;
      ntags = m->meta_info_def->n_tags;
    }
    sm_status *fs = sm_saved_model_find_meta_graph(sm, tags, ntags, &found);
    /* Its own tag set must always find a MetaGraph (perhaps an earlier one with equal tags). */
    if (fs || !found) {
      fprintf(stderr, "meta_graphs[%zu] not found by its own tags: %s\n", i, sm_status_message(fs));
      abort();
    }
  }

  char *text = NULL;
  size_t tlen = 0;
  s = sm_pbtxt_print(&sm->base, &text, &tlen);
  sm_status_free(s);
  free(text);

  size_t n1 = tensorflow__saved_model__get_packed_size(sm);
  uint8_t *p1 = malloc(n1 ? n1 : 1);
  if (!p1) abort();
  if (tensorflow__saved_model__pack(sm, p1) != n1) abort();
  sm_saved_model_free(sm);

  Tensorflow__SavedModel *sm2 = NULL;
  s = sm_saved_model_parse(p1, n1, "fuzz/repacked", &sm2);
  if (s) {
    fprintf(stderr, "packed model does not parse again: %s\n", sm_status_message(s));
    abort();
  }
  size_t n2 = tensorflow__saved_model__get_packed_size(sm2);
  uint8_t *p2 = malloc(n2 ? n2 : 1);
  if (!p2) abort();
  if (tensorflow__saved_model__pack(sm2, p2) != n2) abort();
  if (n1 != n2 || memcmp(p1, p2, n1) != 0) {
    fprintf(stderr, "pack(parse(pack(x))) != pack(x): %zu vs %zu bytes\n", n2, n1);
    abort();
  }
  sm_saved_model_free(sm2);
  free(p1);
  free(p2);
  return 0;
}
