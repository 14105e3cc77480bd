/* file_ops.c - sm__file_ops: every node of a MetaGraph (main graph and function library) whose op
 * reads a file, with the path it reads when the graph says it (a Const, an asset the loader feeds,
 * the checkpoint prefix the loader feeds), and whether that path lies inside the export: what
 * `scan` and `validate` report so that a model that reads /etc/passwd is visible before it runs
 * (the kernels themselves are confined by sm__kctx_open_file). Nothing here opens a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/verify.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"

/* The ops that read a file, and which input names it. */
static const struct {
  const char *op;
  int input;
} file_ops[] = {
    {"InitializeTableFromTextFileV2", 1}, {"InitializeTableFromTextFile", 1}, {"RestoreV2", 0},
    {"Restore", 0},  {"RestoreSlice", 0}, {"ReadFile", 0}, {"LoadAndRemapMatrix", 0},
    {"TextLineDataset", 0}, {"TFRecordDataset", 0}, {"FixedLengthRecordDataset", 0},
    {"FixedLengthRecordDatasetV2", 0},
    /* TF1's readers read the files their queue (input 1) gives: always "computed" */
    {"ReaderRead", 1}, {"ReaderReadV2", 1}, {"ReaderReadUpTo", 1}, {"ReaderReadUpToV2", 1},
    {"ImmutableConst", -1}, /* memory_region_name attr */
};

typedef struct list {
  sm_file_op *v;
  size_t n, cap;
} list;

typedef struct asset {
  const char *tensor; /* "name:0" or "name" */
  const char *filename;
} asset;

/* "x", "x:0", "x:out:0", "^x": the node name's length. */
static size_t node_len(const char *in) {
  size_t n = strcspn(in, ":");
  return n;
}

static int same_tensor(const char *a, const char *node, size_t nlen) {
  /* an asset tensor "n:0" or "n" against a node name */
  size_t al = strcspn(a, ":");
  if (al != nlen || strncmp(a, node, nlen)) return 0;
  return !a[al] || !strcmp(a + al, ":0");
}

static const Tensorflow__NodeDef *find_node(Tensorflow__NodeDef *const *nodes, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (nodes[i] && nodes[i]->name && strlen(nodes[i]->name) == len && !strncmp(nodes[i]->name, name, len))
      return nodes[i];
  return NULL;
}

static const Tensorflow__AttrValue *attr(const Tensorflow__NodeDef *nd, const char *key) {
  for (size_t i = 0; i < nd->n_attr; i++)
    if (nd->attr[i] && nd->attr[i]->key && !strcmp(nd->attr[i]->key, key)) return nd->attr[i]->value;
  return NULL;
}

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

static char *join3(const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 3;
  char *r = malloc(n);
  if (r) snprintf(r, n, "%s/%s/%s", a, b, c);
  return r;
}

/* Fills path, source and inside of f from the node feeding the op's path input. */
static int resolve(sm_file_op *f, const char *dir, const Tensorflow__MetaGraphDef *mg, Tensorflow__NodeDef *const *nodes,
                   size_t nnodes, const char *input, const asset *assets, size_t nassets, int main_graph) {
  f->source = "computed";
  f->inside = -1;
  if (!input || input[0] == '^') return 0;
  size_t nl = node_len(input);
  if (main_graph) {
    for (size_t i = 0; i < nassets; i++)
      if (same_tensor(assets[i].tensor, input, nl) && !strchr(input + nl + (input[nl] == ':'), ':')) {
        f->source = "asset";
        if (!(f->path = join3(dir, SM_ASSETS_DIRECTORY, assets[i].filename))) return -1;
        f->inside = sm__path_inside(dir, f->path);
        return 0;
      }
    const char *fnt = mg->saver_def ? mg->saver_def->filename_tensor_name : NULL;
    if (fnt && node_len(fnt) == nl && !strncmp(fnt, input, nl)) {
      f->source = "loader";
      if (!(f->path = join3(dir, SM_VARIABLES_DIRECTORY, SM_VARIABLES_FILENAME))) return -1;
      f->inside = 1; /* the loader feeds its own variables prefix */
      return 0;
    }
  }
  const Tensorflow__NodeDef *src = find_node(nodes, nnodes, input, nl);
  if (!src || !src->op || strcmp(src->op, "Const")) return 0;
  const Tensorflow__AttrValue *v = attr(src, "value");
  const Tensorflow__TensorProto *t = v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR ? v->tensor : NULL;
  if (!t || t->dtype != TENSORFLOW__DATA_TYPE__DT_STRING || t->n_string_val < 1) return 0;
  f->source = "const";
  if (!(f->path = dupn((const char *)t->string_val[0].data, t->string_val[0].len))) return -1;
  /* a path with a NUL names no file a kernel opens (it refuses it) */
  if (strlen(f->path) == t->string_val[0].len) {
    int in = sm__path_inside(dir, f->path);
    /* a missing file: judged by its words (absolute and not under dir is outside) */
    if (in < 0 && f->path[0] == '/' && strncmp(f->path, dir, strlen(dir))) in = 0;
    f->inside = in;
  }
  return 0;
}

static int scan_nodes(list *l, const char *dir, const Tensorflow__MetaGraphDef *mg, Tensorflow__NodeDef *const *nodes,
                      size_t n, const char *function, const asset *assets, size_t nassets) {
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__NodeDef *nd = nodes[i];
    if (!nd || !nd->op) continue;
    size_t k = 0, nk = sizeof file_ops / sizeof *file_ops;
    while (k < nk && strcmp(file_ops[k].op, nd->op)) k++;
    if (k == nk) continue;
    if (l->n == l->cap) {
      size_t nc = l->cap ? l->cap * 2 : 8;
      sm_file_op *nv = realloc(l->v, nc * sizeof *nv);
      if (!nv) return -1;
      l->v = nv;
      l->cap = nc;
    }
    sm_file_op *f = &l->v[l->n++];
    memset(f, 0, sizeof *f);
    f->op = nd->op;
    f->node = nd->name ? nd->name : "";
    f->function = function;
    if (file_ops[k].input < 0) { /* ImmutableConst: the region is an attr */
      const Tensorflow__AttrValue *v = attr(nd, "memory_region_name");
      f->source = "computed";
      f->inside = -1;
      if (v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_S) {
        if (!(f->path = dupn((const char *)v->s.data, v->s.len))) return -1;
        f->source = "const";
        f->inside = sm__path_inside(dir, f->path);
      }
      continue;
    }
    const char *in = (size_t)file_ops[k].input < nd->n_input ? nd->input[file_ops[k].input] : NULL;
    if (resolve(f, dir, mg, nodes, n, in, assets, nassets, function == NULL)) return -1;
  }
  return 0;
}

void sm__file_ops_free(sm_file_op *ops, size_t n) {
  for (size_t i = 0; ops && i < n; i++) free(ops[i].path);
  free(ops);
}

sm_status *sm__file_ops(const char *dir, const Tensorflow__MetaGraphDef *mg, sm_file_op **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  list l = {0};
  asset *assets = NULL;
  size_t nassets = 0;
  ProtobufCMessage **unpacked = NULL;
  size_t nunpacked = 0;
  sm_status *s = NULL;
  /* the asset tensors the loader feeds: asset_file_def, or (TF1) the saved_model_assets collection */
  const Tensorflow__CollectionDef *c = NULL;
  for (size_t i = 0; i < mg->n_collection_def; i++)
    if (mg->collection_def[i] && mg->collection_def[i]->key && !strcmp(mg->collection_def[i]->key, SM_ASSETS_KEY))
      c = mg->collection_def[i]->value;
  size_t cap = mg->n_asset_file_def;
  if (!cap && c && c->kind_case == TENSORFLOW__COLLECTION_DEF__KIND_ANY_LIST && c->any_list) cap = c->any_list->n_value;
  assets = calloc(cap + 1, sizeof *assets);
  unpacked = calloc(cap + 1, sizeof *unpacked);
  if (!assets || !unpacked) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  for (size_t i = 0; !s && i < cap; i++) {
    const Tensorflow__AssetFileDef *a = NULL;
    if (mg->n_asset_file_def) {
      a = mg->asset_file_def[i];
    } else {
      const Google__Protobuf__Any *any = c->any_list->value[i];
      ProtobufCMessage *m = NULL;
      sm_status *ps = any ? sm_pb_parse(&tensorflow__asset_file_def__descriptor, any->value.data, any->value.len,
                                        "collection saved_model_assets", &m)
                          : NULL;
      if (ps && sm_status_code(ps) == SM_NO_MEMORY) s = ps;
      else sm_status_free(ps); /* a damaged entry: validate reports it with the assets */
      if (m) unpacked[nunpacked++] = m;
      a = (const Tensorflow__AssetFileDef *)m;
    }
    const Tensorflow__TensorInfo *ti = a ? a->tensor_info : NULL;
    if (ti && ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME && ti->name && a->filename)
      assets[nassets++] = (asset){ti->name, a->filename};
  }
  const Tensorflow__GraphDef *g = mg->graph_def;
  if (!s && g && scan_nodes(&l, dir, mg, g->node, g->n_node, NULL, assets, nassets))
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
  for (size_t i = 0; !s && g && g->library && i < g->library->n_function; i++) {
    const Tensorflow__FunctionDef *f = g->library->function[i];
    if (!f) continue;
    const char *fname = f->signature && f->signature->name ? f->signature->name : "";
    if (scan_nodes(&l, dir, mg, f->node_def, f->n_node_def, fname, assets, nassets))
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  /* paths point into the MetaGraph or are ours; the unpacked assets are only needed above */
  for (size_t i = 0; i < nunpacked; i++) protobuf_c_message_free_unpacked(unpacked[i], NULL);
  free(unpacked);
  free(assets);
  if (s) {
    sm__file_ops_free(l.v, l.n);
    return s;
  }
  *out = l.v;
  *nout = l.n;
  return NULL;
}
