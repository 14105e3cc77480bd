/* tf_graph.c - TensorFlow C API: TF_Graph and TF_Operation, a read-only view of the GraphDef of
 * the MetaGraphDef that TF_LoadSessionFromSavedModel loaded.
 *
 * Every NodeDef of the GraphDef is one TF_Operation, in GraphDef order (TF_GraphNextOperation),
 * found by name through a sorted index (TF_GraphOperationByName). Output and input counts and
 * dtypes come from the op's OpDef (this library's built-in OpDefs, then the MetaGraph's
 * stripped_op_list), its attrs and their defaults, as TensorFlow computes them when it imports a
 * graph (ref outputs as DT_*_REF, TF's numbers).
 *
 * Shapes: TensorFlow runs every op's shape function at import; this library has none. A tensor's
 * shape is known here when the node states it: Placeholder, PlaceholderWithDefault and
 * Variable(V2) by their "shape" attr, Const by its value, any node by an "_output_shapes" attr.
 * Any other tensor has an unknown shape (TF_GraphGetTensorNumDims -1), where TensorFlow may
 * know some dims. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "compat/compat_internal.h"
#include "savedmodel/graph_builder.h"

TF_Graph *TF_NewGraph(void) {
  TF_Graph *g = sm__calloc(sizeof *g);
  if (g && pthread_mutex_init(&g->mu, NULL)) {
    sm__free(g);
    return NULL;
  }
  return g;
}

static void graph_free(TF_Graph *g) {
  for (size_t i = 0; i < g->nops; i++) {
    sm__free(g->ops[i].out_types);
    sm__free(g->ops[i].in_types);
  }
  sm__free(g->ops);
  sm__free(g->by_name);
  sm_saved_model_free(g->sm);
  pthread_mutex_destroy(&g->mu);
  sm__free(g);
}

void TF_DeleteGraph(TF_Graph *g) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->deleted = 1;
  int last = g->sessions == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) graph_free(g);
}

void sm__tf_graph_attach(TF_Graph *g) {
  pthread_mutex_lock(&g->mu);
  g->sessions++;
  pthread_mutex_unlock(&g->mu);
}

void sm__tf_graph_detach(TF_Graph *g) {
  pthread_mutex_lock(&g->mu);
  int last = --g->sessions == 0 && g->deleted;
  pthread_mutex_unlock(&g->mu);
  if (last) graph_free(g);
}

/* ---- OpDefs and attrs -------------------------------------------------------------------- */
static const Tensorflow__OpDef *find_op_def(const Tensorflow__MetaGraphDef *mg, const char *op) {
  const Tensorflow__OpDef *d = sm_op_def(op);
  if (d) return d;
  const Tensorflow__OpList *l = mg->meta_info_def ? mg->meta_info_def->stripped_op_list : NULL;
  for (size_t i = 0; l && i < l->n_op; i++)
    if (l->op[i]->name && !strcmp(l->op[i]->name, op)) return l->op[i];
  return NULL;
}

/* The node's attr, else the OpDef's default; NULL when neither has it. */
static const Tensorflow__AttrValue *attr(const Tensorflow__NodeDef *n, const Tensorflow__OpDef *d, const char *name) {
  for (size_t i = 0; i < n->n_attr; i++)
    if (!strcmp(n->attr[i]->key, name)) return n->attr[i]->value;
  for (size_t i = 0; d && i < d->n_attr; i++)
    if (!strcmp(d->attr[i]->name, name)) return d->attr[i]->default_value;
  return NULL;
}

/* The flat dtypes of one side's args (outputs or inputs): types[*n] appended; -1 when an attr the
 * arg needs is missing (a count then is 1). Returns 0 when memory ran out. */
static int arg_types(const Tensorflow__NodeDef *n, const Tensorflow__OpDef *d, Tensorflow__OpDef__ArgDef **args,
                     size_t nargs, int **types, int *count) {
  int cap = 0;
  *types = NULL;
  *count = 0;
  for (size_t a = 0; a < nargs; a++) {
    const Tensorflow__OpDef__ArgDef *arg = args[a];
    int64_t k = 1;
    int dtype = arg->type;
    const Tensorflow__AttrValue__ListValue *list = NULL;
    if (arg->type_attr && arg->type_attr[0]) {
      const Tensorflow__AttrValue *v = attr(n, d, arg->type_attr);
      dtype = v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE ? (int)v->type : -1;
    }
    if (arg->number_attr && arg->number_attr[0]) {
      const Tensorflow__AttrValue *v = attr(n, d, arg->number_attr);
      k = v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_I && v->i >= 0 && v->i < 1000000 ? v->i : 1;
    } else if (arg->type_list_attr && arg->type_list_attr[0]) {
      const Tensorflow__AttrValue *v = attr(n, d, arg->type_list_attr);
      list = v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST ? v->list : NULL;
      k = list ? (int64_t)list->n_type : 0;
    }
    for (int64_t j = 0; j < k; j++) {
      if (*count == cap) {
        int ncap = cap ? cap * 2 : 4;
        int *t = sm__realloc(*types, sizeof(int) * (size_t)ncap);
        if (!t) return 0;
        *types = t;
        cap = ncap;
      }
      int t = list ? (int)list->type[j] : dtype;
      if (t > 0 && arg->is_ref) t += SM_DTYPE_REF_OFFSET;
      (*types)[(*count)++] = t;
    }
  }
  return 1;
}

static int count_data_inputs(const Tensorflow__NodeDef *n) {
  int k = 0;
  for (size_t i = 0; i < n->n_input; i++)
    if (n->input[i][0] != '^') k++;
  return k;
}

static const TF_Graph *sort_graph; /* qsort has no context argument; filled under the fill's lock */
static int by_name_cmp(const void *a, const void *b) {
  return strcmp(sort_graph->ops[*(const size_t *)a].node->name, sort_graph->ops[*(const size_t *)b].node->name);
}
static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

sm_status *sm__tf_graph_fill(TF_Graph *g, Tensorflow__SavedModel *sm, const Tensorflow__MetaGraphDef *mg) {
  g->sm = sm;
  g->mg = mg;
  const Tensorflow__GraphDef *gd = mg->graph_def;
  size_t n = gd ? gd->n_node : 0;
  g->ops = sm__calloc(sizeof(TF_Operation) * (n ? n : 1));
  g->by_name = sm__alloc(sizeof(size_t) * (n ? n : 1));
  if (!g->ops || !g->by_name) goto oom;
  for (size_t i = 0; i < n; i++) {
    TF_Operation *op = &g->ops[i];
    const Tensorflow__NodeDef *nd = gd->node[i];
    op->graph = g;
    op->node = nd;
    g->nops = i + 1;
    const Tensorflow__OpDef *d = find_op_def(mg, nd->op);
    op->ninputs = count_data_inputs(nd);
    op->in_types = sm__alloc(sizeof(int) * (size_t)(op->ninputs ? op->ninputs : 1));
    if (!op->in_types) goto oom;
    for (int k = 0; k < op->ninputs; k++) op->in_types[k] = -1;
    if (!d) continue; /* an op nobody knows: no outputs, inputs of unknown type */
    int *in = NULL, nin = 0;
    if (!arg_types(nd, d, d->output_arg, d->n_output_arg, &op->out_types, &op->noutputs) ||
        !arg_types(nd, d, d->input_arg, d->n_input_arg, &in, &nin)) {
      sm__free(in);
      goto oom;
    }
    for (int k = 0; k < nin && k < op->ninputs; k++) op->in_types[k] = in[k];
    sm__free(in);
  }
  for (size_t i = 0; i < n; i++) g->by_name[i] = i;
  pthread_mutex_lock(&sort_mu);
  sort_graph = g;
  qsort(g->by_name, n, sizeof(size_t), by_name_cmp);
  pthread_mutex_unlock(&sort_mu);
  return NULL;
oom:
  return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the C API's view of a graph of %zu nodes", n);
}

/* ---- lookups ----------------------------------------------------------------------------- */
TF_Operation *TF_GraphOperationByName(TF_Graph *g, const char *name) {
  if (!g || !name) return NULL;
  size_t lo = 0, hi = g->nops;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    TF_Operation *op = &g->ops[g->by_name[mid]];
    int c = strcmp(op->node->name, name);
    if (!c) return op;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

TF_Operation *TF_GraphNextOperation(TF_Graph *g, size_t *pos) {
  if (!g || !pos || *pos >= g->nops) return NULL;
  return &g->ops[(*pos)++];
}

void TF_GraphToGraphDef(TF_Graph *g, TF_Buffer *out, TF_Status *s) {
  const ProtobufCMessage *m = g && g->mg && g->mg->graph_def ? &g->mg->graph_def->base : NULL;
  size_t len = m ? protobuf_c_message_get_packed_size(m) : 0;
  uint8_t *buf = sm__alloc(len);
  if (!buf) {
    sm__tf_set(s, TF_RESOURCE_EXHAUSTED, "OOM when allocating a GraphDef of %zu bytes", len);
    return;
  }
  if (m) protobuf_c_message_pack(m, buf);
  TF_Buffer *copy = TF_NewBufferFromString(buf, len); /* its deallocator frees what it holds */
  sm__free(buf);
  if (!copy) {
    sm__tf_set(s, TF_RESOURCE_EXHAUSTED, "OOM when allocating a GraphDef of %zu bytes", len);
    return;
  }
  if (out->data_deallocator) out->data_deallocator((void *)out->data, out->length);
  *out = *copy;
  copy->data_deallocator = NULL;
  TF_DeleteBuffer(copy);
  sm__tf_ok(s);
}

const char *TF_OperationName(TF_Operation *op) { return op->node->name; }
const char *TF_OperationOpType(TF_Operation *op) { return op->node->op; }
const char *TF_OperationDevice(TF_Operation *op) { return op->node->device ? op->node->device : ""; }
int TF_OperationNumOutputs(TF_Operation *op) { return op->noutputs; }
int TF_OperationNumInputs(TF_Operation *op) { return op->ninputs; }

TF_DataType TF_OperationOutputType(TF_Output o) {
  if (!o.oper || o.index < 0 || o.index >= o.oper->noutputs || o.oper->out_types[o.index] < 0) return (TF_DataType)0;
  return (TF_DataType)o.oper->out_types[o.index];
}

TF_DataType TF_OperationInputType(TF_Input in) {
  if (!in.oper || in.index < 0 || in.index >= in.oper->ninputs || in.oper->in_types[in.index] < 0) return (TF_DataType)0;
  return (TF_DataType)in.oper->in_types[in.index];
}

TF_Output TF_OperationInput(TF_Input in) {
  TF_Output r = {NULL, -1};
  if (!in.oper || in.index < 0 || in.index >= in.oper->ninputs) return r;
  const Tensorflow__NodeDef *n = in.oper->node;
  const char *src = NULL;
  for (size_t i = 0, k = 0; i < n->n_input; i++)
    if (n->input[i][0] != '^' && (int)k++ == in.index) src = n->input[i];
  if (!src) return r;
  char name[1024];
  size_t len = strlen(src);
  if (len >= sizeof name) return r;
  memcpy(name, src, len + 1);
  int index = 0;
  char *colon = strrchr(name, ':');
  if (colon) {
    index = atoi(colon + 1);
    *colon = 0;
  }
  r.oper = TF_GraphOperationByName(in.oper->graph, name);
  r.index = r.oper ? index : -1;
  return r;
}

/* ---- shapes ------------------------------------------------------------------------------ */
/* The stated shape of an output, or NULL (unknown). */
static const Tensorflow__TensorShapeProto *stated_shape(TF_Output o) {
  const Tensorflow__NodeDef *n = o.oper->node;
  const Tensorflow__AttrValue *v = attr(n, NULL, "_output_shapes");
  if (v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && (size_t)o.index < v->list->n_shape)
    return v->list->shape[o.index];
  if (o.index != 0) return NULL;
  if (!strcmp(n->op, "Placeholder") || !strcmp(n->op, "PlaceholderWithDefault") || !strcmp(n->op, "VariableV2") ||
      !strcmp(n->op, "Variable")) {
    v = attr(n, find_op_def(o.oper->graph->mg, n->op), "shape");
    return v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE ? v->shape : NULL;
  }
  if (!strcmp(n->op, "Const")) {
    v = attr(n, NULL, "value");
    return v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR && v->tensor->tensor_shape
               ? v->tensor->tensor_shape
               : NULL;
  }
  return NULL;
}

int sm__tf_check_output(TF_Output o, TF_Status *s) {
  if (!o.oper) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "TF_Output has no operation");
    return 0;
  }
  if (o.index < 0 || o.index >= o.oper->noutputs) {
    sm__tf_set(s, TF_OUT_OF_RANGE, "Node '%s' (type: '%s', num of outputs: %d) does not have output %d",
               o.oper->node->name, o.oper->node->op, o.oper->noutputs, o.index);
    return 0;
  }
  return 1;
}

int TF_GraphGetTensorNumDims(TF_Graph *g, TF_Output o, TF_Status *s) {
  (void)g;
  if (!sm__tf_check_output(o, s)) return -1;
  sm__tf_ok(s);
  const Tensorflow__TensorShapeProto *p = stated_shape(o);
  return !p || p->unknown_rank ? -1 : (int)p->n_dim;
}

void TF_GraphGetTensorShape(TF_Graph *g, TF_Output o, int64_t *dims, int num_dims, TF_Status *s) {
  int nd = TF_GraphGetTensorNumDims(g, o, s);
  if (TF_GetCode(s) != TF_OK) return;
  if (nd != num_dims) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "Expected rank is %d but actual rank is %d", num_dims, nd);
    return;
  }
  const Tensorflow__TensorShapeProto *p = stated_shape(o);
  for (int i = 0; i < nd; i++) dims[i] = p->dim[i]->size;
}
