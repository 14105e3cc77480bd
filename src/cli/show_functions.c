/* show_functions.c - the "Concrete Functions" section that `saved_model_cli show --all` ends with.
 *
 * saved_model_cli loads the model with tf.saved_model.load and walks the root object's children
 * (_show_defined_functions, _print_args). Everything it prints is in the SavedObjectGraph: the
 * root's children that are functions (sorted by name), each function's concrete functions (sorted
 * by name) and their canonicalized_input_signature, a StructuredValue that decodes to
 * (args, kwargs). This file prints those values the way Python's repr()/str() print the decoded
 * objects (TensorSpec, TensorShape, tf.DType, list, tuple, dict, namedtuple, scalars). */
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
  const char *n = sm_cli_tf_dtype_name(dtype);
  if (n) fprintf(f, "tf.%s", n);
  else fprintf(f, "tf.<DataType %d>", dtype);
}

static void tensor_spec_repr(FILE *f, const Tensorflow__TensorSpecProto *t) {
  fputs("TensorSpec(shape=", f);
  shape_str(f, t->shape);
  fputs(", dtype=", f);
  dtype_repr(f, (int)t->dtype);
  fputs(", name=", f);
  if (t->name && t->name[0]) sm_py_repr_str(f, t->name, strlen(t->name));
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
  case TENSORFLOW__STRUCTURED_VALUE__KIND_FLOAT64_VALUE: sm_py_repr_float(f, v->float64_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_INT64_VALUE: fprintf(f, "%lld", (long long)v->int64_value); break;
  case TENSORFLOW__STRUCTURED_VALUE__KIND_STRING_VALUE:
    sm_py_repr_str(f, v->string_value, strlen(v->string_value));
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
      sm_py_repr_str(f, k, strlen(k));
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
    fprintf(f, "<dtype: '%s'>", sm_cli_tf_dtype_name((int)v->tensor_dtype_value)
                                    ? sm_cli_tf_dtype_name((int)v->tensor_dtype_value)
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

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One function child: its concrete functions, sorted by name, as "Option #i". */
static void print_function(FILE *f, const Tensorflow__SavedObjectGraph *og, const Tensorflow__SavedObject *obj) {
  const char **names;
  size_t n;
  const Tensorflow__SavedBareConcreteFunction *bare = NULL;
  if (obj->kind_case == TENSORFLOW__SAVED_OBJECT__KIND_FUNCTION) {
    n = obj->function->n_concrete_functions;
    names = malloc((n ? n : 1) * sizeof *names);
    if (!names) return;
    for (size_t i = 0; i < n; i++) names[i] = obj->function->concrete_functions[i];
    qsort(names, n, sizeof *names, str_cmp);
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

void sm_show_functions(FILE *f, const Tensorflow__SavedModel *sm) {
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
  const Tensorflow__SavedObject *root = og->nodes[0];
  sm_kv *kids = malloc((root->n_children ? root->n_children : 1) * sizeof *kids);
  if (!kids) return;
  size_t n = 0;
  for (size_t i = 0; i < root->n_children; i++) {
    const Tensorflow__TrackableObjectGraph__TrackableObject__ObjectReference *r = root->children[i];
    if (r->node_id < 0 || (size_t)r->node_id >= og->n_nodes) continue;
    kids[n].key = r->local_name ? r->local_name : "";
    kids[n].value = og->nodes[r->node_id];
    kids[n].index = i;
    n++;
  }
  n = sm_kv_sort_unique(kids, n);
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__SavedObject *obj = kids[i].value;
    if (obj->kind_case != TENSORFLOW__SAVED_OBJECT__KIND_FUNCTION &&
        obj->kind_case != TENSORFLOW__SAVED_OBJECT__KIND_BARE_CONCRETE_FUNCTION)
      continue;
    fprintf(f, "\n  Function Name: '%s'\n", kids[i].key);
    print_function(f, og, obj);
  }
  free(kids);
}
