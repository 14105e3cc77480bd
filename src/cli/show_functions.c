/* show_functions.c - the "Concrete Functions" section that `saved_model_cli show --all` ends with.
 *
 * saved_model_cli loads the model with tf.saved_model.load and walks the root object's children
 * (_show_defined_functions, _print_args). Everything it prints is in the SavedObjectGraph: the
 * root's children that are functions (sorted by name), each function's concrete functions (in
 * the order loading names them) and their canonicalized_input_signature, a StructuredValue that decodes to
 * (args, kwargs). This file prints those values the way Python's repr()/str() print the decoded
 * objects (TensorSpec, TensorShape, tf.DType, list, tuple, dict, namedtuple, scalars). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/show.h"

typedef Tensorflow__StructuredValue sv;

#define SV_IS(v, K) ((v) && (v)->kind_case == TENSORFLOW__STRUCTURED_VALUE__KIND_##K)

static void py_repr(FILE *f, const sv *v, int depth);

static void shape_str(FILE *f, const Tensorflow__TensorShapeProto *s) {
  if (s && s->unknown_rank) {
    fputs("<unknown>", f);
    return;
  }
  size_t n = s ? s->n_dim : 0;
  fputc('(', f);
  for (size_t i = 0; i < n; i++) {
    int64_t d = s->dim[i] ? s->dim[i]->size : 0;
    if (i) fputs(", ", f);
    if (d < 0) fputs("None", f);
    else fprintf(f, "%lld", (long long)d);
  }
  fputs(n == 1 ? ",)" : ")", f);
}

static void dtype_repr(FILE *f, int dtype) {
  const char *n = sm__cli_tf_dtype_name(dtype);
  if (n) fprintf(f, "tf.%s", n);
  else fprintf(f, "tf.<DataType %d>", dtype);
}

static void tensor_spec_repr(FILE *f, const Tensorflow__TensorSpecProto *t) {
  fputs("TensorSpec(shape=", f);
  shape_str(f, t->shape);
  fputs(", dtype=", f);
  dtype_repr(f, (int)t->dtype);
  fputs(", name=", f);
  if (t->name && t->name[0]) sm__py_repr_str(f, t->name, strlen(t->name));
  else fputs("None", f);
  fputc(')', f);
}

static void seq_repr(FILE *f, sv *const *vals, size_t n, char open, char close, int depth) {
  fputc(open, f);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    py_repr(f, vals[i], depth + 1);
  }
  if (open == '(' && n == 1) fputc(',', f);
  fputc(close, f);
}

static void py_repr(FILE *f, const sv *v, int depth) {
  if (!v || depth > 64) { /* an unset value decodes to nothing TF can print either */
    fputs("None", f);
    return;
  }
  switch (v->kind_case) {
  case TENSORFLOW__STRUCTURED_VALUE__KIND_FLOAT64_VALUE: sm__py_repr_float(f, v->float64_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_INT64_VALUE: fprintf(f, "%lld", (long long)v->int64_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_STRING_VALUE:
    sm__py_repr_str(f, v->string_value, strlen(v->string_value));
    break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_BOOL_VALUE: fputs(v->bool_value ? "True" : "False", f); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TENSOR_SHAPE_VALUE: {
    const Tensorflow__TensorShapeProto *s = v->tensor_shape_value;
    if (s && s->unknown_rank) {
      fputs("TensorShape(None)", f);
      break;
    }
    fputs("TensorShape([", f);
    for (size_t i = 0; s && i < s->n_dim; i++) {
      int64_t d = s->dim[i] ? s->dim[i]->size : 0;
      if (i) fputs(", ", f);
      if (d < 0) fputs("None", f);
      else fprintf(f, "%lld", (long long)d);
    }
    fputs("])", f);
    break;
  }
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TENSOR_DTYPE_VALUE: dtype_repr(f, (int)v->tensor_dtype_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TENSOR_SPEC_VALUE: tensor_spec_repr(f, v->tensor_spec_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_LIST_VALUE:
    seq_repr(f, v->list_value->values, v->list_value->n_values, '[', ']', depth);
    break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TUPLE_VALUE:
    seq_repr(f, v->tuple_value->values, v->tuple_value->n_values, '(', ')', depth);
    break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_DICT_VALUE: {
    const Tensorflow__DictValue *d = v->dict_value;
    fputc('{', f);
    for (size_t i = 0; i < d->n_fields; i++) {
      const char *k = d->fields[i]->key ? d->fields[i]->key : "";
      if (i) fputs(", ", f);
      sm__py_repr_str(f, k, strlen(k));
      fputs(": ", f);
      py_repr(f, d->fields[i]->value, depth + 1);
    }
    fputc('}', f);
    break;
  }
  case TENSORFLOW__STRUCTURED_VALUE__KIND_NAMED_TUPLE_VALUE: {
    const Tensorflow__NamedTupleValue *t = v->named_tuple_value;
    fprintf(f, "%s(", t->name ? t->name : "");
    for (size_t i = 0; i < t->n_values; i++)
      if (t->values[i]) {
        fprintf(f, "%s%s=", i ? ", " : "", t->values[i]->key ? t->values[i]->key : "");
        py_repr(f, t->values[i]->value, depth + 1);
      }
    fputc(')', f);
    break;
  }
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TYPE_SPEC_VALUE:
    /* Composite specs (RaggedTensorSpec, ...) have class-specific reprs; name the class. */
    fprintf(f, "%s(...)", v->type_spec_value->type_spec_class_name &&
                                  v->type_spec_value->type_spec_class_name[0]
                              ? v->type_spec_value->type_spec_class_name
                              : "TypeSpec");
    break;
  default: fputs("None", f); break;
  }
}

/* str(): differs from repr() only for str and tf.DType at the top level. */
static void py_str(FILE *f, const sv *v) {
  if (SV_IS(v, STRING_VALUE)) fputs(v->string_value, f);
  else if (SV_IS(v, TENSOR_DTYPE_VALUE))
    fprintf(f, "<dtype: '%s'>", sm__cli_tf_dtype_name((int)v->tensor_dtype_value)
                                    ? sm__cli_tf_dtype_name((int)v->tensor_dtype_value)
                                    : "?");
  else if (SV_IS(v, TENSOR_SHAPE_VALUE)) shape_str(f, v->tensor_shape_value);
  else py_repr(f, v, 0);
}

static const char *py_type_name(const sv *v) {
  switch (v ? v->kind_case : TENSORFLOW__STRUCTURED_VALUE__KIND__NOT_SET) {
  case TENSORFLOW__STRUCTURED_VALUE__KIND_FLOAT64_VALUE: return "float";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_INT64_VALUE: return "int";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_BOOL_VALUE: return "bool";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TENSOR_SHAPE_VALUE: return "TensorShape";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TENSOR_DTYPE_VALUE: return "DType";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_LIST_VALUE: return "list";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TUPLE_VALUE: return "tuple";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_DICT_VALUE: return "dict";
  case TENSORFLOW__STRUCTURED_VALUE__KIND_NAMED_TUPLE_VALUE: return v->named_tuple_value->name;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_TYPE_SPEC_VALUE: return v->type_spec_value->type_spec_class_name;
  default: return "NoneType";
  }
}

/* _maybe_add_quotes: str values get bare quotes around str(value), others print str(value). */
static void maybe_quoted(FILE *f, const sv *v) {
  int q = SV_IS(v, STRING_VALUE);
  if (q) fputc('\'', f);
  py_str(f, v);
  if (q) fputc('\'', f);
}

/* One element of _print_args at indent 4. */
static void print_arg(FILE *f, const sv *e) {
  const char *in = "        "; /* '  ' * 4 */
  if (SV_IS(e, STRING_VALUE)) {
    fprintf(f, "%s  %s\n", in, e->string_value);
  } else if (SV_IS(e, TENSOR_SPEC_VALUE)) {
    const char *name = e->tensor_spec_value->name;
    fprintf(f, "%s  %s: ", in, name && name[0] ? name : "None");
    tensor_spec_repr(f, e->tensor_spec_value);
    fputc('\n', f);
  } else if (SV_IS(e, LIST_VALUE) || SV_IS(e, TUPLE_VALUE) ||
             (SV_IS(e, TENSOR_SHAPE_VALUE) && !(e->tensor_shape_value && e->tensor_shape_value->unknown_rank))) {
    fprintf(f, "%s  DType: %s\n%s  Value: [", in, py_type_name(e), in);
    if (SV_IS(e, TENSOR_SHAPE_VALUE)) {
      const Tensorflow__TensorShapeProto *s = e->tensor_shape_value;
      for (size_t i = 0; s && i < s->n_dim; i++) {
        int64_t d = s->dim[i] ? s->dim[i]->size : 0;
        if (d < 0) fputs("None, ", f);
        else fprintf(f, "%lld, ", (long long)d);
      }
    } else {
      size_t n = SV_IS(e, LIST_VALUE) ? e->list_value->n_values : e->tuple_value->n_values;
      sv *const *vals = SV_IS(e, LIST_VALUE) ? e->list_value->values : e->tuple_value->values;
      for (size_t i = 0; i < n; i++) {
        maybe_quoted(f, vals[i]);
        fputs(", ", f);
      }
    }
    fputs("\b\b]\n", f);
  } else if (SV_IS(e, NAMED_TUPLE_VALUE)) {
    const Tensorflow__NamedTupleValue *t = e->named_tuple_value;
    fprintf(f, "%s  DType: %s\n%s  Value: [", in, t->name ? t->name : "", in);
    for (size_t i = 0; i < t->n_values; i++) {
      maybe_quoted(f, t->values[i] ? t->values[i]->value : NULL);
      fputs(", ", f);
    }
    fputs("\b\b]\n", f);
  } else if (SV_IS(e, DICT_VALUE)) {
    const Tensorflow__DictValue *d = e->dict_value;
    fprintf(f, "%s  DType: dict\n%s  Value: {", in, in);
    for (size_t i = 0; i < d->n_fields; i++) {
      fprintf(f, "'%s': ", d->fields[i]->key ? d->fields[i]->key : "");
      maybe_quoted(f, d->fields[i]->value);
      fputs(", ", f);
    }
    fputs("\b\b}\n", f);
  } else {
    fprintf(f, "%s  DType: %s\n%s  Value: ", in, py_type_name(e), in);
    py_str(f, e);
    fputc('\n', f);
  }
}

static const Tensorflow__SavedConcreteFunction *concrete(const Tensorflow__SavedObjectGraph *og,
                                                        const char *name) {
  const Tensorflow__SavedConcreteFunction *c = NULL;
  for (size_t i = 0; i < og->n_concrete_functions; i++)
    if (og->concrete_functions[i]->key && strcmp(og->concrete_functions[i]->key, name) == 0)
      c = og->concrete_functions[i]->value;
  return c;
}


/* ---- the order tf.saved_model.load gives concrete functions ----
 * A restored function's concrete functions get fresh names "__inference_<name>_<uid>" with uids
 * handed out in load order, and saved_model_cli sorts by those names. Load order is
 * function_deserialization._sort_function_defs: a topological sort of the library that starts
 * from the functions without dependencies in library order and always takes the last ready one.
 * A dependency that never resolves makes the load fail (rank -1 for all). */
typedef struct load_order {
  sm_kv *byname; /* library names, sorted; value = (void *)(uintptr_t)rank */
  size_t n;
  int failed;
} load_order;

static const Tensorflow__FunctionDef *lib_fn(const Tensorflow__FunctionDefLibrary *lib, size_t i) {
  return lib->function[i];
}

static const char *fn_name(const Tensorflow__FunctionDef *f) {
  return f->signature && f->signature->name ? f->signature->name : "";
}

static long lookup_index(const sm_kv *kv, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(kv[mid].key, name);
    if (c == 0) return (long)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Appends name to the dependency list deps (unique), growing it as needed. */
static int add_dep(const char ***deps, size_t *n, size_t *cap, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*deps)[i], name) == 0) return 0;
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 8;
    const char **d = realloc(*deps, c * sizeof *d);
    if (!d) return -1;
    *deps = d;
    *cap = c;
  }
  (*deps)[(*n)++] = name;
  return 0;
}

/* _list_function_deps: ops that are library functions, else every func / list.func attr. */
static int function_deps(const Tensorflow__FunctionDef *f, const sm_kv *names, size_t nnames,
                         const char ***deps, size_t *n) {
  size_t cap = 0;
  *deps = NULL;
  *n = 0;
  for (size_t i = 0; i < f->n_node_def; i++) {
    const Tensorflow__NodeDef *node = f->node_def[i];
    const char *op = node->op ? node->op : "";
    if (lookup_index(names, nnames, op) >= 0) {
      if (add_dep(deps, n, &cap, op)) return -1;
      continue;
    }
    for (size_t k = 0; k < node->n_attr; k++) {
      const Tensorflow__AttrValue *v = node->attr[k]->value;
      if (!v) continue;
      if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && v->func) {
        if (add_dep(deps, n, &cap, v->func->name ? v->func->name : "")) return -1;
      } else if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && v->list) {
        for (size_t j = 0; j < v->list->n_func; j++)
          if (add_dep(deps, n, &cap, v->list->func[j]->name ? v->list->func[j]->name : "")) return -1;
      }
    }
  }
  return 0;
}

static int load_order_init(load_order *lo, const Tensorflow__FunctionDefLibrary *lib) {
  size_t n = lib ? lib->n_function : 0;
  memset(lo, 0, sizeof *lo);
  if (n == 0) return 0;
  int rc = -1;
  size_t *in_count = calloc(n, sizeof *in_count), *stack = malloc(n * sizeof *stack);
  size_t *edge_start = calloc(n + 1, sizeof *edge_start), *edges = NULL, nedges = 0;
  size_t *dep_from = NULL, *dep_to = NULL, cap = 0;
  lo->byname = malloc(n * sizeof *lo->byname);
  if (!in_count || !stack || !edge_start || !lo->byname) goto out;
  for (size_t i = 0; i < n; i++) {
    lo->byname[i].key = fn_name(lib_fn(lib, i));
    lo->byname[i].value = NULL;
    lo->byname[i].index = i;
  }
  lo->n = sm__kv_sort_unique(lo->byname, n);

  /* edges[dep] lists its dependents in library order */
  for (size_t i = 0; i < n; i++) {
    const char **deps;
    size_t nd;
    if (function_deps(lib_fn(lib, i), lo->byname, lo->n, &deps, &nd)) goto out;
    for (size_t k = 0; k < nd; k++) {
      in_count[i]++;
      long j = lookup_index(lo->byname, lo->n, deps[k]);
      if (j < 0) continue; /* never resolves: the load fails below */
      if (nedges == cap) {
        cap = cap ? 2 * cap : 16;
        size_t *a = realloc(dep_from, cap * sizeof *a), *b = a ? realloc(dep_to, cap * sizeof *b) : NULL;
        if (a) dep_from = a;
        if (b) dep_to = b;
        if (!a || !b) { free(deps); goto out; }
      }
      dep_from[nedges] = lo->byname[j].index;
      dep_to[nedges] = i;
      nedges++;
    }
    free(deps);
  }
  edges = malloc((nedges ? nedges : 1) * sizeof *edges);
  if (!edges) goto out;
  for (size_t e = 0; e < nedges; e++) edge_start[dep_from[e] + 1]++;
  for (size_t i = 0; i < n; i++) edge_start[i + 1] += edge_start[i];
  {
    size_t *fill = calloc(n, sizeof *fill);
    if (!fill) goto out;
    for (size_t e = 0; e < nedges; e++) /* stable: dependents stay in library order */
      edges[edge_start[dep_from[e]] + fill[dep_from[e]]++] = dep_to[e];
    free(fill);
  }

  size_t top = 0, rank = 0;
  for (size_t i = 0; i < n; i++)
    if (in_count[i] == 0) stack[top++] = i;
  size_t *rank_of = calloc(n, sizeof *rank_of);
  if (!rank_of) goto out;
  while (top) {
    size_t node = stack[--top];
    rank_of[node] = ++rank;
    for (size_t e = edge_start[node]; e < edge_start[node + 1]; e++)
      if (--in_count[edges[e]] == 0) stack[top++] = edges[e];
  }
  lo->failed = rank != n;
  for (size_t i = 0; i < lo->n; i++)
    lo->byname[i].value = (const void *)(uintptr_t)rank_of[lo->byname[i].index];
  free(rank_of);
  rc = 0;
out:
  free(in_count), free(stack), free(edge_start), free(edges), free(dep_from), free(dep_to);
  return rc;
}

/* 1-based load position of a library function; 0 when it is not in the library. */
static size_t load_rank(const load_order *lo, const char *name) {
  long i = lookup_index(lo->byname, lo->n, name);
  return i < 0 ? 0 : (size_t)(uintptr_t)lo->byname[i].value;
}

static const load_order *sort_ctx;

static int by_load_order(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  size_t rx = load_rank(sort_ctx, x), ry = load_rank(sort_ctx, y);
  if (rx != ry) return rx == 0 ? 1 : ry == 0 ? -1 : (rx > ry) - (rx < ry);
  return strcmp(x, y);
}

/* One function child: its concrete functions, in load order, as "Option #i". */
static void print_function(FILE *f, const Tensorflow__SavedObjectGraph *og, const load_order *lo,
                           const Tensorflow__SavedObject *obj) {
  const char **names;
  size_t n;
  const Tensorflow__SavedBareConcreteFunction *bare = NULL;
  if (obj->kind_case == TENSORFLOW__SAVED_OBJECT__KIND_FUNCTION) {
    n = obj->function->n_concrete_functions;
    names = malloc((n ? n : 1) * sizeof *names);
    if (!names) return;
    for (size_t i = 0; i < n; i++) names[i] = obj->function->concrete_functions[i];
    sort_ctx = lo;
    qsort(names, n, sizeof *names, by_load_order);
  } else {
    bare = obj->bare_concrete_function;
    n = 1;
    names = malloc(sizeof *names);
    if (!names) return;
    names[0] = bare->concrete_function_name ? bare->concrete_function_name : "";
  }
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__SavedConcreteFunction *c = concrete(og, names[i]);
    const sv *sig = c ? c->canonicalized_input_signature : NULL;
    if (SV_IS(sig, TUPLE_VALUE) && sig->tuple_value->n_values == 2) {
      const sv *args = sig->tuple_value->values[0], *kwargs = sig->tuple_value->values[1];
      size_t nargs = SV_IS(args, TUPLE_VALUE) ? args->tuple_value->n_values
                     : SV_IS(args, LIST_VALUE) ? args->list_value->n_values : 0;
      sv *const *argv = SV_IS(args, TUPLE_VALUE) ? args->tuple_value->values
                        : SV_IS(args, LIST_VALUE) ? args->list_value->values : NULL;
      if (nargs) {
        fprintf(f, "    Option #%zu\n      Callable with:\n", i + 1);
        for (size_t k = 0; k < nargs; k++) {
          fprintf(f, "        Argument #%zu\n", k + 1);
          print_arg(f, argv[k]);
        }
      }
      if (SV_IS(kwargs, DICT_VALUE))
        for (size_t k = 0; k < kwargs->dict_value->n_fields; k++) /* iterating a dict: its keys */
          fprintf(f, "        Named Argument #%zu\n          %s\n", k + 1,
                  kwargs->dict_value->fields[k]->key ? kwargs->dict_value->fields[k]->key : "");
    } else if (bare && bare->n_argument_keywords) {
      /* No structured signature: TF falls back to the argument keywords. */
      fprintf(f, "    Option #%zu\n      Callable with:\n", i + 1);
      for (size_t k = 0; k < bare->n_argument_keywords; k++)
        fprintf(f, "        Argument #%zu\n          %s\n", k + 1, bare->argument_keywords[k]);
    }
  }
  free(names);
}

void sm__show_functions(FILE *f, const Tensorflow__SavedModel *sm) {
  const Tensorflow__SavedObjectGraph *og = NULL;
  for (size_t i = 0; i < sm->n_meta_graphs; i++)
    if (sm->meta_graphs[i]->object_graph_def) og = sm->meta_graphs[i]->object_graph_def;
  if (!og) return;
  fputs("\nConcrete Functions:", f);
  /* tf.saved_model.load without tags refuses a SavedModel with several MetaGraphs. */
  if (sm->n_meta_graphs != 1 || og->n_nodes == 0) {
    fputs(" N/A (could not be listed due to unknown reasons)\n", f);
    return;
  }
  load_order lo;
  const Tensorflow__GraphDef *g = sm->meta_graphs[0]->graph_def;
  if (load_order_init(&lo, g ? g->library : NULL) != 0) {
    free(lo.byname);
    fputs(" N/A (out of memory)\n", f);
    return;
  }
  if (lo.failed) { /* TF: "There is a cyclic dependency between functions" */
    free(lo.byname);
    fputs(" N/A (could not be listed due to unknown reasons)\n", f);
    return;
  }
  const Tensorflow__SavedObject *root = og->nodes[0];
  sm_kv *kids = malloc((root->n_children ? root->n_children : 1) * sizeof *kids);
  if (!kids) {
    free(lo.byname);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < root->n_children; i++) {
    const Tensorflow__TrackableObjectGraph__TrackableObject__ObjectReference *r = root->children[i];
    if (r->node_id < 0 || (size_t)r->node_id >= og->n_nodes) continue;
    kids[n].key = r->local_name ? r->local_name : "";
    kids[n].value = og->nodes[r->node_id];
    kids[n].index = i;
    n++;
  }
  n = sm__kv_sort_unique(kids, n);
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__SavedObject *obj = kids[i].value;
    if (obj->kind_case != TENSORFLOW__SAVED_OBJECT__KIND_FUNCTION &&
        obj->kind_case != TENSORFLOW__SAVED_OBJECT__KIND_BARE_CONCRETE_FUNCTION)
      continue;
    fprintf(f, "\n  Function Name: '%s'\n", kids[i].key);
    print_function(f, og, &lo, obj);
  }
  free(kids);
  free(lo.byname);
}
