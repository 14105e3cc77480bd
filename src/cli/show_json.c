/* show_json.c - `savedmodel show --json`: what show prints, as one JSON document for programs.
 *
 * {"saved_model_schema_version": 1, "meta_graphs": [{"tags": [...], "signatures": {KEY:
 *   {"method_name": M, "inputs": {K: {"name", "dtype", "shape"}}, "outputs": {...}}},
 *   "ops": [...] (with --all or --list_ops)}]}
 * dtype is the DataType name ("DT_FLOAT"), shape a list of dims (-1 unknown) or null for unknown
 * rank; keys are sorted; composite / sparse tensors get "encoding" instead of "name". */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/show.h"
#include "savedmodel/dtype.h"

static void jstr(FILE *f, const char *s) { sm__json_str(f, s ? s : "", s ? strlen(s) : 0); }

static void tensor_info(FILE *f, const Tensorflow__TensorInfo *ti) {
  fputs("{", f);
  if (!ti || ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME ||
      ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING__NOT_SET) {
    fputs("\"name\": ", f);
    jstr(f, ti && ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME ? ti->name : "");
  } else if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_COO_SPARSE) {
    fputs("\"encoding\": \"coo_sparse\", \"values\": ", f);
    jstr(f, ti->coo_sparse->values_tensor_name);
    fputs(", \"indices\": ", f);
    jstr(f, ti->coo_sparse->indices_tensor_name);
    fputs(", \"dense_shape\": ", f);
    jstr(f, ti->coo_sparse->dense_shape_tensor_name);
  } else {
    fputs("\"encoding\": \"composite_tensor\", \"components\": [", f);
    const Tensorflow__TensorInfo__CompositeTensor *c = ti->composite_tensor;
    for (size_t i = 0; c && i < c->n_components; i++) {
      if (i) fputs(", ", f);
      tensor_info(f, c->components[i]);
    }
    fputs("]", f);
  }
  int dtype = ti ? (int)ti->dtype : 0;
  fputs(", \"dtype\": ", f);
  if (sm_dtype_name(dtype)) jstr(f, sm_dtype_name(dtype));
  else fprintf(f, "%d", dtype);
  fputs(", \"shape\": ", f);
  const Tensorflow__TensorShapeProto *sh = ti ? ti->tensor_shape : NULL;
  if (sh && sh->unknown_rank) fputs("null", f);
  else {
    fputs("[", f);
    for (size_t i = 0; sh && i < sh->n_dim; i++)
      fprintf(f, i ? ", %lld" : "%lld", (long long)(sh->dim[i] ? sh->dim[i]->size : 0));
    fputs("]", f);
  }
  fputs("}", f);
}

static void tensor_map(FILE *f, sm_kv *kv, size_t n) {
  fputs("{", f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ", " : "", f);
    jstr(f, kv[i].key);
    fputs(": ", f);
    tensor_info(f, kv[i].value);
  }
  fputs("}", f);
}

static void signature(FILE *f, const Tensorflow__SignatureDef *s) {
  size_t nin = 0, nout = 0;
  sm_kv *in = s ? sm__signature_inputs(s, &nin) : NULL;
  sm_kv *out = s ? sm__signature_outputs(s, &nout) : NULL;
  fputs("{\"method_name\": ", f);
  jstr(f, s ? s->method_name : "");
  fputs(", \"inputs\": ", f);
  tensor_map(f, in, nin);
  fputs(", \"outputs\": ", f);
  tensor_map(f, out, nout);
  fputs("}", f);
  free(in);
  free(out);
}

static void meta_graph(FILE *f, const Tensorflow__MetaGraphDef *mg, const char *only_sig, int with_ops) {
  fputs("    {\"tags\": [", f);
  size_t ntags = mg->meta_info_def ? mg->meta_info_def->n_tags : 0;
  for (size_t i = 0; i < ntags; i++) {
    fputs(i ? ", " : "", f);
    jstr(f, mg->meta_info_def->tags[i]);
  }
  fputs("],\n     \"signatures\": {", f);
  size_t n;
  sm_kv *sigs = sm__meta_graph_signatures(mg, &n);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (only_sig && strcmp(only_sig, sigs[i].key) != 0) continue;
    fputs(first ? "\n       " : ",\n       ", f);
    first = 0;
    jstr(f, sigs[i].key);
    fputs(": ", f);
    signature(f, sigs[i].value);
  }
  free(sigs);
  fputs("}", f);
  if (with_ops) {
    const char **ops;
    size_t nops;
    if (sm__graph_ops_used(mg->graph_def, &ops, &nops) == 0) {
      fputs(",\n     \"ops\": [", f);
      for (size_t i = 0; i < nops; i++) {
        fputs(i ? ", " : "", f);
        jstr(f, ops[i]);
      }
      fputs("]", f);
      free(ops);
    }
  }
  fputs("}", f);
}

void sm__show_json(FILE *f, const Tensorflow__SavedModel *sm, const Tensorflow__MetaGraphDef *only_mg,
                  const char *only_sig, int with_ops) {
  fprintf(f, "{\"saved_model_schema_version\": %lld,\n \"meta_graphs\": [\n",
          (long long)sm->saved_model_schema_version);
  int first = 1;
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    if (only_mg && sm->meta_graphs[i] != only_mg) continue;
    if (!first) fputs(",\n", f);
    first = 0;
    meta_graph(f, sm->meta_graphs[i], only_sig, with_ops);
  }
  fputs("\n ]}\n", f);
}
