/* show.h - the pieces of `savedmodel show` shared between its files (show.c prints the text,
 * show_json.c the JSON, show_functions.c the "Concrete Functions" section, show_ops.c the op set). */
#ifndef SM_CLI_SHOW_H
#define SM_CLI_SHOW_H

#include <stddef.h>
#include <stdio.h>

#include "saved_model.pb-c.h"

/* One protobuf map entry. Maps arrive from protobuf-c as repeated entries in file order, maybe
 * with repeated keys; like every protobuf reader, the last one wins. */
typedef struct sm_kv {
  const char *key;
  const void *value;
  size_t index;
} sm_kv;

/* Sorts entries by key (byte order = code point order, as Python sorts str) and removes repeated
 * keys keeping the last value. Returns the new count. */
size_t sm__kv_sort_unique(sm_kv *kv, size_t n);

/* Map entries of a SignatureDef / MetaGraphDef as sm_kv arrays (malloc'ed; NULL when n == 0 or out
 * of memory, in which case *n is 0 too). */
sm_kv *sm__signature_inputs(const Tensorflow__SignatureDef *s, size_t *n);
sm_kv *sm__signature_outputs(const Tensorflow__SignatureDef *s, size_t *n);
sm_kv *sm__meta_graph_signatures(const Tensorflow__MetaGraphDef *mg, size_t *n);

/* The op names used by a graph and the library functions it calls, sorted and unique, as
 * meta_graph.ops_used_by_graph_def computes them. *names borrows strings from graph. */
int sm__graph_ops_used(const Tensorflow__GraphDef *graph, const char ***names, size_t *n);

/* Prints the "Concrete Functions" section of --all for TF2 models (nothing for TF1 ones). */
void sm__show_functions(FILE *f, const Tensorflow__SavedModel *sm);

/* JSON for --json: every MetaGraph (or the one matching tags), its signatures (or one). */
void sm__show_json(FILE *f, const Tensorflow__SavedModel *sm, const Tensorflow__MetaGraphDef *only_mg,
                  const char *only_sig, int with_ops);

/* The MetaGraph for a --tag_set value (split on ',', blanks trimmed, as run and scan do); prints
 * TF's message and returns 1 when there is none. */
int sm__cli_find_meta_graph(const Tensorflow__SavedModel *sm, const char *tag_set, const Tensorflow__MetaGraphDef **mg);

#endif
