/* builder.c - sm_builder: SavedModelBuilder in C. Owns the MetaGraphs being assembled, the TF1
 * Saver subgraph added to each graph, and the temp-dir-then-rename save. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/file.h"
#include "builder/builder_internal.h"
#include "savedmodel/builder.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"
#include "variable.pb-c.h"

/* GraphDef version of the TensorFlow release whose OpDefs op_table.c holds (2.21). */
#define SM_GRAPH_DEF_VERSION 2474

struct sm_builder {
  char *export_dir;
  Tensorflow__SavedModel *sm; /* malloc-owned, freed with protobuf_c_message_free_unpacked */
  int has_variables_call;
  char **var_names;
  sm_tensor **var_values; /* owned copies, taken when the first MetaGraph is added */
  size_t nvars;
  char **asset_names, **asset_sources; /* assets/ file name -> file copied there */
  size_t nassets;
  int saved;
};

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

sm_status *sm_builder_new(const char *export_dir, sm_builder **out) {
  *out = NULL;
  if (!export_dir || !*export_dir) return sm_status_new(SM_INVALID_ARGUMENT, "empty export directory");
  if (sm__path_exists(export_dir))
    return sm_status_new(SM_ALREADY_EXISTS, "export directory %s already exists; a SavedModel is never written over one",
                         export_dir);
  sm_builder *b = calloc(1, sizeof *b);
  if (!b) return oom();
  b->export_dir = sm__b_strdup(export_dir);
  b->sm = malloc(sizeof *b->sm);
  if (!b->export_dir || !b->sm) {
    free(b->export_dir);
    free(b->sm);
    free(b);
    return oom();
  }
  tensorflow__saved_model__init(b->sm);
  b->sm->saved_model_schema_version = SM_SAVED_MODEL_SCHEMA_VERSION;
  *out = b;
  return NULL;
}

void sm_builder_free(sm_builder *b) {
  if (!b) return;
  protobuf_c_message_free_unpacked(&b->sm->base, NULL);
  for (size_t i = 0; i < b->nvars; i++) {
    free(b->var_names[i]);
    sm_tensor_free(b->var_values[i]);
  }
  for (size_t i = 0; i < b->nassets; i++) {
    free(b->asset_names[i]);
    free(b->asset_sources[i]);
  }
  free(b->asset_names);
  free(b->asset_sources);
  free(b->var_names);
  free(b->var_values);
  free(b->export_dir);
  free(b);
}

/* ---- the TF1 Saver subgraph (saver.py, BaseSaverBuilder with sharded=True, V2) ---- */
static sm_status *const_str(sm_graph *g, const char *name, const char *device, const char *const *v, size_t n,
                            int vector, const char **out) {
  int64_t d = (int64_t)n;
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_STRING, vector ? 1 : 0, &d, &t);
  for (size_t i = 0; i < n && !s; i++) s = sm_tensor_set_string(t, (int64_t)i, v[i], strlen(v[i]));
  if (s) {
    sm_tensor_free(t);
    return s;
  }
  sm_op *op = sm_op_begin(g, "Const", name);
  sm_op_attr_tensor(op, "value", t);
  sm_op_attr_type(op, "dtype", SM_STRING);
  if (device) sm_op_device(op, device);
  sm_tensor_free(t);
  return sm_op_finish(op, out);
}

static sm_status *const_i32(sm_graph *g, const char *name, const char *device, int32_t v, const char **out) {
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_INT32, 0, NULL, &t);
  if (s) return s;
  memcpy(sm_tensor_data(t), &v, 4);
  sm_op *op = sm_op_begin(g, "Const", name);
  sm_op_attr_tensor(op, "value", t);
  sm_op_attr_type(op, "dtype", SM_INT32);
  if (device) sm_op_device(op, device);
  sm_tensor_free(t);
  return sm_op_finish(op, out);
}

typedef struct {
  const char *name;
  size_t idx;
} var_ref;
static int cmp_var_ref(const void *a, const void *b) {
  return strcmp(((const var_ref *)a)->name, ((const var_ref *)b)->name);
}

static char *join3(const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s", a, b, c);
  return p;
}

#define TRY(x)        \
  do {                \
    s = (x);          \
    if (s) goto done; \
  } while (0)

static sm_status *add_saver(sm_graph *g) {
  sm_graph_saver *sv = sm__graph_saver_state(g);
  if (sv->added) return NULL;
  size_t n = sm_graph_num_variables(g);
  var_ref *vars = calloc(n ? n : 1, sizeof *vars);
  const char **names = calloc(n ? n : 1, sizeof *names), **empty = calloc(n ? n : 1, sizeof *empty);
  int *dts = calloc(n ? n : 1, sizeof *dts);
  if (!vars || !names || !empty || !dts) {
    free(vars);
    free(names);
    free(empty);
    free(dts);
    return oom();
  }
  for (size_t i = 0; i < n; i++) {
    const sm_tensor *v;
    sm_graph_variable_at(g, i, &vars[i].name, &v);
    vars[i].idx = i;
  }
  qsort(vars, n, sizeof *vars, cmp_var_ref); /* the Saver orders tensors by checkpoint key */
  for (size_t i = 0; i < n; i++) {
    const sm_tensor *v;
    sm_graph_variable_at(g, vars[i].idx, NULL, &v);
    names[i] = vars[i].name;
    empty[i] = "";
    dts[i] = sm_tensor_dtype(v);
  }
  sm_status *s = NULL;
  const char *scope = NULL, *fin = NULL, *fname = NULL, *cst = NULL, *match = NULL, *c1 = NULL, *c2 = NULL,
             *sel = NULL, *join = NULL, *nsh = NULL, *shard = NULL, *shf = NULL, *tn = NULL, *ss = NULL, *save = NULL,
             *cdep = NULL, *prefixes = NULL, *merge = NULL, *ident = NULL, *rtn = NULL, *rss = NULL, *restore = NULL,
             *shard_done = NULL, *all = NULL;
  const char *cpu_any = "/device:CPU:*", *cpu0 = "/device:CPU:0";
  char *ctl = NULL, *ctl2 = NULL;
  TRY(sm_graph_push_scope(g, "save", &scope));
  TRY(const_str(g, "filename/input", NULL, (const char *[]){"model"}, 1, 0, &fin));
  sm_op *op = sm_op_begin(g, "PlaceholderWithDefault", "filename");
  sm_op_input(op, fin);
  sm_op_attr_shape(op, "shape", 0, NULL);
  sm_op_attr_type(op, "dtype", SM_STRING);
  TRY(sm_op_finish(op, &fname));
  op = sm_op_begin(g, "PlaceholderWithDefault", "Const");
  sm_op_input(op, fname);
  sm_op_attr_shape(op, "shape", 0, NULL);
  sm_op_attr_type(op, "dtype", SM_STRING);
  TRY(sm_op_finish(op, &cst));
  op = sm_op_begin(g, "StaticRegexFullMatch", NULL);
  sm_op_input(op, cst);
  sm_op_device(op, cpu_any);
  sm_op_attr_string(op, "pattern", "^s3://.*", 8);
  TRY(sm_op_finish(op, &match));
  TRY(const_str(g, "Const", cpu_any, (const char *[]){".part"}, 1, 0, &c1));
  TRY(const_str(g, "Const", cpu_any, (const char *[]){"_temp/part"}, 1, 0, &c2));
  op = sm_op_begin(g, "Select", NULL);
  sm_op_input(op, match);
  sm_op_input(op, c1);
  sm_op_input(op, c2);
  sm_op_device(op, cpu_any);
  TRY(sm_op_finish(op, &sel));
  op = sm_op_begin(g, "StringJoin", NULL);
  sm_op_input(op, cst);
  sm_op_input(op, sel);
  sm_op_device(op, cpu_any);
  TRY(sm_op_finish(op, &join));
  TRY(const_i32(g, "num_shards", NULL, 1, &nsh));
  TRY(const_i32(g, "ShardedFilename/shard", cpu0, 0, &shard));
  op = sm_op_begin(g, "ShardedFilename", NULL);
  sm_op_input(op, join);
  sm_op_input(op, shard);
  sm_op_input(op, nsh);
  sm_op_device(op, cpu0);
  TRY(sm_op_finish(op, &shf));
  TRY(const_str(g, "SaveV2/tensor_names", cpu0, names, n, 1, &tn));
  TRY(const_str(g, "SaveV2/shape_and_slices", cpu0, empty, n, 1, &ss));
  op = sm_op_begin(g, "SaveV2", NULL);
  sm_op_input(op, shf);
  sm_op_input(op, tn);
  sm_op_input(op, ss);
  for (size_t i = 0; i < n; i++) {
    char *r = join3(names[i], "/Read/ReadVariableOp", "");
    if (!r) {
      s = oom();
      goto done;
    }
    sm_op_input(op, r);
    free(r);
  }
  sm_op_device(op, cpu0);
  sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
  TRY(sm_op_finish(op, &save));
  op = sm_op_begin(g, "Identity", "control_dependency");
  sm_op_input(op, shf);
  ctl = join3("^", save, "");
  sm_op_input(op, ctl);
  sm_op_device(op, cpu0);
  sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
  {
    char *loc = join3("loc:@", shf, "");
    const char *l = loc;
    if (loc) sm_op_attr_string_list(op, "_class", &l, 1);
    free(loc);
  }
  TRY(sm_op_finish(op, &cdep));
  free(ctl);
  ctl = join3("^", cdep, "");
  op = sm_op_begin(g, "Pack", "MergeV2Checkpoints/checkpoint_prefixes");
  sm_op_input(op, shf);
  sm_op_input(op, ctl);
  sm_op_device(op, cpu0);
  TRY(sm_op_finish(op, &prefixes));
  op = sm_op_begin(g, "MergeV2Checkpoints", NULL);
  sm_op_input(op, prefixes);
  sm_op_input(op, cst);
  sm_op_device(op, cpu0);
  sm_op_attr_bool(op, "delete_old_dirs", 1);
  sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
  TRY(sm_op_finish(op, &merge));
  op = sm_op_begin(g, "Identity", NULL);
  sm_op_input(op, cst);
  ctl2 = join3("^", merge, "");
  sm_op_input(op, ctl2);
  sm_op_input(op, ctl);
  sm_op_device(op, cpu0);
  TRY(sm_op_finish(op, &ident));
  TRY(const_str(g, "RestoreV2/tensor_names", cpu0, names, n, 1, &rtn));
  TRY(const_str(g, "RestoreV2/shape_and_slices", cpu0, empty, n, 1, &rss));
  op = sm_op_begin(g, "RestoreV2", NULL);
  sm_op_input(op, cst);
  sm_op_input(op, rtn);
  sm_op_input(op, rss);
  sm_op_attr_type_list(op, "dtypes", dts, n);
  sm_op_device(op, cpu0);
  TRY(sm_op_finish(op, &restore));
  op = sm_op_begin(g, "NoOp", "restore_shard");
  for (size_t i = 0; i < n; i++) {
    char idx[32];
    snprintf(idx, sizeof idx, ":%zu", i);
    char *src = join3(restore, idx, ""), *c = NULL;
    const char *id = NULL, *assign = NULL;
    if (!src) {
      s = oom();
    } else {
      s = sm_graph_unary(g, "Identity", NULL, src, &id);
      free(src);
    }
    if (!s) {
      sm_op *a = sm_op_begin(g, "AssignVariableOp", NULL);
      sm_op_input(a, names[i]);
      sm_op_input(a, id);
      sm_op_attr_bool(a, "validate_shape", 0);
      sm_op_attr_type(a, "dtype", dts[i]);
      sm_op_attr_bool(a, "_has_manual_control_dependencies", 1);
      s = sm_op_finish(a, &assign);
    }
    if (!s && !(c = join3("^", assign, ""))) s = oom();
    if (s) {
      sm_status_free(sm_op_finish(op, NULL)); /* frees op; its own status is moot */
      goto done;
    }
    sm_op_input(op, c);
    free(c);
  }
  sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
  TRY(sm_op_finish(op, &shard_done));
  free(ctl);
  ctl = join3("^", shard_done, "");
  op = sm_op_begin(g, "NoOp", "restore_all");
  sm_op_input(op, ctl);
  TRY(sm_op_finish(op, &all));
  sv->filename_tensor = join3(cst, ":0", "");
  sv->save_tensor = join3(ident, ":0", "");
  sv->restore_op = sm__b_strdup(all);
  if (!sv->filename_tensor || !sv->save_tensor || !sv->restore_op) {
    s = oom();
    goto done;
  }
  sv->added = 1;
done:
  if (scope) sm_graph_pop_scope(g);
  free(ctl);
  free(ctl2);
  free(vars);
  free(names);
  free(empty);
  free(dts);
  return s ? sm_status_prefix(s, "adding the save/restore subgraph") : NULL;
}

/* ---- MetaGraphDef assembly ---- */
static int same_tags(char **a, size_t na, const char *const *b, size_t nb) {
  for (size_t i = 0; i < na; i++) {
    int f = 0;
    for (size_t j = 0; j < nb && !f; j++) f = !strcmp(a[i], b[j]);
    if (!f) return 0;
  }
  for (size_t j = 0; j < nb; j++) {
    int f = 0;
    for (size_t i = 0; i < na && !f; i++) f = !strcmp(a[i], b[j]);
    if (!f) return 0;
  }
  return 1;
}

static sm_status *variables_collection(const sm_graph *g, Tensorflow__MetaGraphDef *mg) {
  size_t n = sm_graph_num_variables(g);
  if (!n) return NULL;
  const char *keys[2] = {SM_VARIABLES_COLLECTION_KEY, SM_TRAINABLE_VARIABLES_COLLECTION_KEY};
  for (int k = 0; k < 2; k++) {
    Tensorflow__MetaGraphDef__CollectionDefEntry *e = malloc(sizeof *e);
    Tensorflow__CollectionDef *cd = malloc(sizeof *cd);
    Tensorflow__CollectionDef__BytesList *bl = malloc(sizeof *bl);
    if (!e || !cd || !bl) {
      free(e);
      free(cd);
      free(bl);
      return oom();
    }
    tensorflow__meta_graph_def__collection_def_entry__init(e);
    tensorflow__collection_def__init(cd);
    tensorflow__collection_def__bytes_list__init(bl);
    cd->kind_case = TENSORFLOW__COLLECTION_DEF__KIND_BYTES_LIST;
    cd->bytes_list = bl;
    e->value = cd;
    e->key = sm__b_strdup(keys[k]);
    if (!e->key || !sm__b_push(&mg->collection_def, &mg->n_collection_def, e)) {
      protobuf_c_message_free_unpacked(&e->base, NULL);
      return oom();
    }
    bl->value = calloc(n, sizeof *bl->value);
    if (!bl->value) return oom();
    for (size_t i = 0; i < n; i++) {
      const char *name;
      sm_graph_variable_at(g, i, &name, NULL);
      Tensorflow__VariableDef vd = TENSORFLOW__VARIABLE_DEF__INIT;
      char *vn = join3(name, ":0", ""), *sn = join3(name, "/Read/ReadVariableOp:0", ""),
           *iv = join3(sm__graph_variable_initial(g, i), ":0", "");
      vd.variable_name = vn;
      vd.initializer_name = (char *)sm__graph_variable_assign(g, i);
      vd.snapshot_name = sn;
      vd.is_resource = 1;
      vd.initial_value_name = iv;
      vd.trainable = 1;
      uint8_t *buf = NULL;
      size_t len = 0;
      if (vn && sn && iv) {
        len = tensorflow__variable_def__get_packed_size(&vd);
        buf = malloc(len ? len : 1);
        if (buf) tensorflow__variable_def__pack(&vd, buf);
      }
      free(vn);
      free(sn);
      free(iv);
      if (!buf) return oom();
      bl->value[bl->n_value].data = buf;
      bl->value[bl->n_value++].len = len;
    }
  }
  return NULL;
}

static sm_status *push_collection(Tensorflow__MetaGraphDef *mg, const char *key, Tensorflow__CollectionDef *cd) {
  Tensorflow__MetaGraphDef__CollectionDefEntry *e = malloc(sizeof *e);
  if (e) {
    tensorflow__meta_graph_def__collection_def_entry__init(e);
    e->value = cd;
    e->key = sm__b_strdup(key);
  }
  if (!e || !e->key || !sm__b_push(&mg->collection_def, &mg->n_collection_def, e)) {
    if (e) protobuf_c_message_free_unpacked(&e->base, NULL);
    else protobuf_c_message_free_unpacked(&cd->base, NULL);
    return oom();
  }
  return NULL;
}

static Tensorflow__CollectionDef *node_list(void) {
  Tensorflow__CollectionDef *cd = malloc(sizeof *cd);
  Tensorflow__CollectionDef__NodeList *nl = malloc(sizeof *nl);
  if (!cd || !nl) {
    free(cd);
    free(nl);
    return NULL;
  }
  tensorflow__collection_def__init(cd);
  tensorflow__collection_def__node_list__init(nl);
  cd->kind_case = TENSORFLOW__COLLECTION_DEF__KIND_NODE_LIST;
  cd->node_list = nl;
  return cd;
}

/* Assets and the main op as TF1's SavedModelBuilder records them: collections asset_filepaths
 * (tensor names), saved_model_assets (AssetFileDef in Any) and saved_model_main_op. */
static sm_status *asset_collections(const sm_graph *g, Tensorflow__MetaGraphDef *mg) {
  size_t n = sm_graph_num_assets(g);
  sm_status *s = NULL;
  if (n) {
    Tensorflow__CollectionDef *paths = node_list(), *defs = malloc(sizeof *defs);
    Tensorflow__CollectionDef__AnyList *al = malloc(sizeof *al);
    if (!paths || !defs || !al) {
      if (paths) protobuf_c_message_free_unpacked(&paths->base, NULL);
      free(defs);
      free(al);
      return oom();
    }
    tensorflow__collection_def__init(defs);
    tensorflow__collection_def__any_list__init(al);
    defs->kind_case = TENSORFLOW__COLLECTION_DEF__KIND_ANY_LIST;
    defs->any_list = al;
    for (size_t i = 0; i < n && !s; i++) {
      const char *node, *file;
      sm_graph_asset_at(g, i, &node, &file, NULL);
      char *tn = join3(node, ":0", "");
      if (!tn || !sm__b_push(&paths->node_list->value, &paths->node_list->n_value, tn)) {
        free(tn);
        s = oom();
        break;
      }
      Tensorflow__AssetFileDef ad = TENSORFLOW__ASSET_FILE_DEF__INIT;
      Tensorflow__TensorInfo ti = TENSORFLOW__TENSOR_INFO__INIT;
      ti.encoding_case = TENSORFLOW__TENSOR_INFO__ENCODING_NAME;
      ti.name = tn;
      ad.tensor_info = &ti;
      ad.filename = (char *)file;
      Google__Protobuf__Any *any = malloc(sizeof *any);
      if (!any) {
        s = oom();
        break;
      }
      google__protobuf__any__init(any);
      any->type_url = sm__b_strdup(SM_ASSET_FILE_DEF_TYPE_URL);
      any->value.len = tensorflow__asset_file_def__get_packed_size(&ad);
      any->value.data = malloc(any->value.len ? any->value.len : 1);
      if (any->value.data) tensorflow__asset_file_def__pack(&ad, any->value.data);
      if (!any->type_url || !any->value.data || !sm__b_push(&al->value, &al->n_value, any)) {
        protobuf_c_message_free_unpacked(&any->base, NULL);
        s = oom();
      }
    }
    if (s) {
      protobuf_c_message_free_unpacked(&paths->base, NULL);
      protobuf_c_message_free_unpacked(&defs->base, NULL);
      return s;
    }
    s = push_collection(mg, SM_ASSET_FILEPATHS_KEY, paths);
    if (s) {
      protobuf_c_message_free_unpacked(&defs->base, NULL);
      return s;
    }
    s = push_collection(mg, SM_ASSETS_KEY, defs);
    if (s) return s;
  }
  if (sm_graph_main_op(g)) {
    Tensorflow__CollectionDef *m = node_list();
    char *op = sm__b_strdup(sm_graph_main_op(g));
    if (!m || !op || !sm__b_push(&m->node_list->value, &m->node_list->n_value, op)) {
      free(op);
      if (m) protobuf_c_message_free_unpacked(&m->base, NULL);
      return oom();
    }
    s = push_collection(mg, SM_MAIN_OP_KEY, m);
  }
  return s;
}

/* Records the graph's assets for copying at save; one file name, one source. */
static sm_status *take_assets(sm_builder *b, const sm_graph *g) {
  for (size_t i = 0; i < sm_graph_num_assets(g); i++) {
    const char *file, *src;
    sm_graph_asset_at(g, i, NULL, &file, &src);
    size_t j = 0;
    while (j < b->nassets && strcmp(b->asset_names[j], file)) j++;
    if (j < b->nassets) {
      if (strcmp(b->asset_sources[j], src))
        return sm_status_new(SM_ALREADY_EXISTS, "asset %s: already taken from %s, now %s", file, b->asset_sources[j], src);
      continue;
    }
    char *f = sm__b_strdup(file), *sc = sm__b_strdup(src);
    size_t n1 = b->nassets, n2 = b->nassets;
    if (!f || !sc || !sm__b_push(&b->asset_names, &n1, f)) {
      free(f);
      free(sc);
      return oom();
    }
    if (!sm__b_push(&b->asset_sources, &n2, sc)) {
      free(sc);
      free(b->asset_names[n1 - 1]);
      return oom();
    }
    b->nassets++;
  }
  return NULL;
}

/* The init op as TF 2.x's SavedModelBuilder records it (op_signature_def): signature
 * "__saved_model_init_op" whose one output of the same key names the op (no ":0"), dtype
 * DT_INVALID, unknown rank, no method name. TF's loaders (C++ GetInitOp, Python get_init_op)
 * look there first; the saved_model_main_op collection stays for loaders older than that. */
static sm_status *init_op_signature(Tensorflow__MetaGraphDef *mg, const char *op) {
  Tensorflow__MetaGraphDef__SignatureDefEntry *e = malloc(sizeof *e);
  Tensorflow__SignatureDef *sd = malloc(sizeof *sd);
  Tensorflow__SignatureDef__OutputsEntry *oe = malloc(sizeof *oe);
  Tensorflow__TensorInfo *ti = malloc(sizeof *ti);
  if (!e || !sd || !oe || !ti) {
    free(e);
    free(sd);
    free(oe);
    free(ti);
    return oom();
  }
  tensorflow__meta_graph_def__signature_def_entry__init(e);
  tensorflow__signature_def__init(sd);
  tensorflow__signature_def__outputs_entry__init(oe);
  tensorflow__tensor_info__init(ti);
  e->value = sd;
  oe->value = ti;
  ti->encoding_case = TENSORFLOW__TENSOR_INFO__ENCODING_NAME;
  ti->name = sm__b_strdup(op);
  ti->dtype = TENSORFLOW__DATA_TYPE__DT_INVALID;
  ti->tensor_shape = sm__b_shape(-1, NULL);
  oe->key = sm__b_strdup(SM_INIT_OP_SIGNATURE_KEY);
  e->key = sm__b_strdup(SM_INIT_OP_SIGNATURE_KEY);
  int ok = ti->name && ti->tensor_shape && oe->key && e->key && sm__b_push(&sd->outputs, &sd->n_outputs, oe);
  if (!ok) {
    if (!sd->n_outputs) protobuf_c_message_free_unpacked(&oe->base, NULL);
    protobuf_c_message_free_unpacked(&e->base, NULL);
    return oom();
  }
  if (!sm__b_push(&mg->signature_def, &mg->n_signature_def, e)) {
    protobuf_c_message_free_unpacked(&e->base, NULL);
    return oom();
  }
  return NULL;
}

static sm_status *add_mg(sm_builder *b, sm_graph *g, const char *const *tags, size_t ntags, sm_signature *const *sigs,
                         size_t nsigs) {
  if (!ntags) return sm_status_new(SM_INVALID_ARGUMENT, "a MetaGraph needs at least one tag");
  for (size_t i = 0; i < b->sm->n_meta_graphs; i++) {
    const Tensorflow__MetaGraphDef__MetaInfoDef *mi = b->sm->meta_graphs[i]->meta_info_def;
    if (same_tags(mi->tags, mi->n_tags, tags, ntags))
      return sm_status_new(SM_ALREADY_EXISTS, "a MetaGraph with tag set [%s%s] was already added", tags[0],
                           ntags > 1 ? ", ..." : "");
  }
  for (size_t i = 0; i < nsigs; i++) {
    if (!strcmp(sm_signature_key(sigs[i]), SM_INIT_OP_SIGNATURE_KEY) ||
        !strcmp(sm_signature_key(sigs[i]), SM_TRAIN_OP_SIGNATURE_KEY))
      return sm_status_new(SM_INVALID_ARGUMENT, "signature key \"%s\" is reserved for the %s op",
                           sm_signature_key(sigs[i]),
                           strcmp(sm_signature_key(sigs[i]), SM_INIT_OP_SIGNATURE_KEY) ? "train" : "init");
    for (size_t j = 0; j < i; j++)
      if (!strcmp(sm_signature_key(sigs[i]), sm_signature_key(sigs[j])))
        return sm_status_new(SM_ALREADY_EXISTS, "signature key \"%s\" given twice", sm_signature_key(sigs[i]));
    sm_status *s = sm_signature_validate(sigs[i], g);
    if (s) return s;
  }
  sm_status *s = sm_graph_num_variables(g) ? add_saver(g) : NULL;
  if (s) return s;
  Tensorflow__MetaGraphDef *mg = malloc(sizeof *mg);
  if (!mg) return oom();
  tensorflow__meta_graph_def__init(mg);
  mg->meta_info_def = malloc(sizeof *mg->meta_info_def);
  if (!mg->meta_info_def) {
    free(mg);
    return oom();
  }
  tensorflow__meta_graph_def__meta_info_def__init(mg->meta_info_def);
  for (size_t i = 0; i < ntags && !s; i++) {
    char *t = sm__b_strdup(tags[i]);
    if (!t || !sm__b_push(&mg->meta_info_def->tags, &mg->meta_info_def->n_tags, t)) {
      free(t);
      s = oom();
    }
  }
  if (!s) s = sm_graph_stripped_op_list(g, &mg->meta_info_def->stripped_op_list);
  ProtobufCMessage *c = NULL;
  if (!s) s = sm__b_clone(&sm_graph_def(g)->base, &c);
  if (!s) {
    mg->graph_def = (Tensorflow__GraphDef *)c;
    if (!mg->graph_def->versions) {
      mg->graph_def->versions = malloc(sizeof *mg->graph_def->versions);
      if (!mg->graph_def->versions) s = oom();
      else {
        tensorflow__version_def__init(mg->graph_def->versions);
        mg->graph_def->versions->producer = SM_GRAPH_DEF_VERSION;
      }
    }
  }
  sm_graph_saver *sv = sm__graph_saver_state(g);
  if (!s && sv->added) {
    mg->saver_def = malloc(sizeof *mg->saver_def);
    if (!mg->saver_def) s = oom();
    else {
      tensorflow__saver_def__init(mg->saver_def);
      mg->saver_def->filename_tensor_name = sm__b_strdup(sv->filename_tensor);
      mg->saver_def->save_tensor_name = sm__b_strdup(sv->save_tensor);
      mg->saver_def->restore_op_name = sm__b_strdup(sv->restore_op);
      mg->saver_def->max_to_keep = 5;
      mg->saver_def->sharded = 1;
      mg->saver_def->keep_checkpoint_every_n_hours = 10000.0f;
      mg->saver_def->version = TENSORFLOW__SAVER_DEF__CHECKPOINT_FORMAT_VERSION__V2;
      if (!mg->saver_def->filename_tensor_name || !mg->saver_def->save_tensor_name || !mg->saver_def->restore_op_name)
        s = oom();
    }
  }
  if (!s) s = variables_collection(g, mg);
  if (!s) s = asset_collections(g, mg);
  if (!s) s = take_assets(b, g);
  for (size_t i = 0; i < nsigs && !s; i++) {
    Tensorflow__MetaGraphDef__SignatureDefEntry *e = malloc(sizeof *e);
    if (!e) {
      s = oom();
      break;
    }
    tensorflow__meta_graph_def__signature_def_entry__init(e);
    e->key = sm__b_strdup(sm_signature_key(sigs[i]));
    ProtobufCMessage *sc = NULL;
    s = sm__b_clone(&sm_signature_def(sigs[i])->base, &sc);
    e->value = (Tensorflow__SignatureDef *)sc;
    if (!s && (!e->key || !sm__b_push(&mg->signature_def, &mg->n_signature_def, e))) s = oom();
    if (s) protobuf_c_message_free_unpacked(&e->base, NULL);
  }
  if (!s && sm_graph_main_op(g)) s = init_op_signature(mg, sm_graph_main_op(g));
  if (!s && !sm__b_push(&b->sm->meta_graphs, &b->sm->n_meta_graphs, mg)) s = oom();
  if (s) protobuf_c_message_free_unpacked(&mg->base, NULL);
  return s;
}

sm_status *sm_builder_add_meta_graph_and_variables(sm_builder *b, sm_graph *g, const char *const *tags,
                                                   size_t ntags, sm_signature *const *sigs, size_t nsigs) {
  if (b->has_variables_call)
    return sm_status_new(SM_FAILED_PRECONDITION, "add_meta_graph_and_variables may be called only once");
  if (b->saved) return sm_status_new(SM_FAILED_PRECONDITION, "the builder has already saved");
  size_t n = sm_graph_num_variables(g);
  char **names = calloc(n ? n : 1, sizeof *names);
  sm_tensor **values = calloc(n ? n : 1, sizeof *values);
  sm_status *s = names && values ? NULL : oom();
  for (size_t i = 0; i < n && !s; i++) {
    const char *name;
    const sm_tensor *v;
    sm_graph_variable_at(g, i, &name, &v);
    names[i] = sm__b_strdup(name);
    s = names[i] ? sm_tensor_copy(v, &values[i]) : oom();
  }
  if (!s) s = add_mg(b, g, tags, ntags, sigs, nsigs);
  if (s) {
    for (size_t i = 0; i < n && names && values; i++) {
      free(names[i]);
      sm_tensor_free(values[i]);
    }
    free(names);
    free(values);
    return s;
  }
  b->var_names = names;
  b->var_values = values;
  b->nvars = n;
  b->has_variables_call = 1;
  return NULL;
}

sm_status *sm_builder_add_meta_graph(sm_builder *b, sm_graph *g, const char *const *tags, size_t ntags,
                                     sm_signature *const *sigs, size_t nsigs) {
  if (!b->has_variables_call)
    return sm_status_new(SM_FAILED_PRECONDITION, "call add_meta_graph_and_variables before add_meta_graph");
  if (b->saved) return sm_status_new(SM_FAILED_PRECONDITION, "the builder has already saved");
  for (size_t i = 0; i < sm_graph_num_variables(g); i++) {
    const char *name;
    const sm_tensor *v;
    sm_graph_variable_at(g, i, &name, &v);
    size_t j = 0;
    while (j < b->nvars && strcmp(b->var_names[j], name)) j++;
    if (j == b->nvars)
      return sm_status_new(SM_INVALID_ARGUMENT, "variable \"%s\" is not among the saved variables", name);
    const sm_tensor *w = b->var_values[j];
    if (sm_tensor_dtype(v) != sm_tensor_dtype(w) || sm_tensor_rank(v) != sm_tensor_rank(w) ||
        memcmp(sm_tensor_dims(v), sm_tensor_dims(w), (size_t)sm_tensor_rank(v) * sizeof(int64_t)))
      return sm_status_new(SM_INVALID_ARGUMENT, "variable \"%s\" differs in dtype or shape from the saved one", name);
  }
  return add_mg(b, g, tags, ntags, sigs, nsigs);
}

/* rename(2) replaces an empty directory at the target; renameat2's RENAME_NOREPLACE refuses
 * any. Kernels or file systems without it (ENOSYS, EINVAL) get the exists-check + rename. */
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
static int rename_noreplace(const char *from, const char *to) {
#ifdef SYS_renameat2
  if (!syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE)) return 0;
  if (errno != ENOSYS && errno != EINVAL) return -1;
#endif
  if (sm__path_exists(to)) {
    errno = EEXIST;
    return -1;
  }
  return rename(from, to);
}

static void fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

sm_status *sm_builder_save(sm_builder *b, int as_text) {
  if (b->saved) return sm_status_new(SM_FAILED_PRECONDITION, "the builder has already saved");
  if (!b->sm->n_meta_graphs)
    return sm_status_new(SM_FAILED_PRECONDITION, "nothing to save: add_meta_graph_and_variables was not called");
  if (sm__path_exists(b->export_dir))
    return sm_status_new(SM_ALREADY_EXISTS, "export directory %s already exists", b->export_dir);
  /* parent and base name of the export dir (trailing slashes ignored) */
  char *dir = sm__b_strdup(b->export_dir);
  if (!dir) return oom();
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') dir[--len] = 0;
  char *slash = strrchr(dir, '/');
  const char *parent = ".", *base = dir;
  if (slash) {
    *slash = 0;
    parent = slash == dir ? "/" : dir;
    base = slash + 1;
  }
  char tmpname[4096];
  snprintf(tmpname, sizeof tmpname, ".tmp-%s-%ld", base, (long)getpid());
  char *tmp = sm__path_join(parent, tmpname), *vars = tmp ? sm__path_join(tmp, SM_VARIABLES_DIRECTORY) : NULL;
  char *prefix = vars ? sm__path_join(vars, SM_VARIABLES_FILENAME) : NULL;
  sm_status *s = NULL;
  sm_bundle_writer *w = NULL;
  if (!prefix) {
    s = oom();
    goto out;
  }
  sm__remove_tree(tmp); /* a leftover of an earlier crashed run of this very pid */
  /* and those of builders killed while saving the same target (their pids gone) */
  char stale[4096];
  snprintf(stale, sizeof stale, ".tmp-%s-", base);
  sm__remove_stale_staging(parent, stale);
  if (mkdir(tmp, 0755) || mkdir(vars, 0755)) {
    s = sm_status_new(SM_IO, "creating %s: %s", tmp, strerror(errno));
    goto fail;
  }
  if (b->nvars) {
    s = sm_bundle_writer_open(prefix, &w);
    for (size_t i = 0; i < b->nvars && !s; i++) s = sm_bundle_writer_add(w, b->var_names[i], b->var_values[i]);
    if (!s) s = sm_bundle_writer_finish(w);
    sm_bundle_writer_free(w);
    if (s) goto fail;
  }
  if (b->nassets) {
    char *adir = sm__path_join(tmp, SM_ASSETS_DIRECTORY);
    if (!adir) s = oom();
    else if (mkdir(adir, 0755)) s = sm_status_new(SM_IO, "creating %s: %s", adir, strerror(errno));
    for (size_t i = 0; i < b->nassets && !s; i++) {
      char *data = NULL, *dst = sm__path_join(adir, b->asset_names[i]);
      size_t dlen = 0;
      s = dst ? sm__file_read_all(b->asset_sources[i], &data, &dlen) : oom();
      if (!s) s = sm__file_write_atomic(dst, data, dlen);
      if (s) s = sm_status_prefix(s, "asset %s", b->asset_names[i]);
      free(data);
      free(dst);
    }
    free(adir);
    if (s) goto fail;
  }
  s = sm_saved_model_write(b->sm, tmp, as_text);
  /* TensorFlow fingerprints saved_model.pb only (CreateFingerprintDef needs it), so a pbtxt
   * export has no fingerprint.pb, as TF's own text exports have none */
  if (!s && !as_text) s = sm_saved_model_write_fingerprint(tmp);
  if (s) goto fail;
  fsync_dir(vars);
  fsync_dir(tmp);
  if (sm__path_exists(b->export_dir)) {
    s = sm_status_new(SM_ALREADY_EXISTS, "export directory %s appeared while saving", b->export_dir);
    goto fail;
  }
  if (rename_noreplace(tmp, b->export_dir)) {
    s = errno == EEXIST || errno == ENOTEMPTY
            ? sm_status_new(SM_ALREADY_EXISTS, "export directory %s appeared while saving", b->export_dir)
            : sm_status_new(SM_IO, "renaming %s to %s: %s", tmp, b->export_dir, strerror(errno));
    goto fail;
  }
  fsync_dir(parent);
  b->saved = 1;
  goto out;
fail:
  sm__remove_tree(tmp);
out:
  free(prefix);
  free(vars);
  free(tmp);
  free(dir);
  return s ? sm_status_prefix(s, "saving %s", b->export_dir) : NULL;
}
