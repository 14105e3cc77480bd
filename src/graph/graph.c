/* graph.c - compiling a MetaGraphDef into an sm_cgraph: node import, OpDef lookup, attr defaults
 * and placeholders, input resolution, dtypes, and inlining of function calls; and compiling one
 * function of the library as a graph of its own (its arguments as _Arg nodes), for sub-plans.
 *
 * Compilation works scope by scope (the GraphDef, then each inlined function body): first every
 * node of the scope is created (name, OpDef, attrs, output dtypes), so that inputs may refer to
 * nodes defined later; then every node's inputs are resolved, and each call node is inlined right
 * after its own inputs are known (the body's arguments are those input edges). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/op_defs.h"

int sm__graph_max_nodes = SM_GRAPH_MAX_NODES;

/* ---- string map ------------------------------------------------------------------------------ */
static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int sm__smap_get(const sm_smap *m, const char *key) {
  if (!m->cap) return -1;
  for (size_t j = hash_str(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
    if (!m->keys[j]) return -1;
    if (!strcmp(m->keys[j], key)) return m->vals[j];
  }
}

int sm__smap_put(sm_smap *m, const char *key, int val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    const char **nk = calloc(nc, sizeof *nk);
    int *nv = malloc(nc * sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return 0;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = hash_str(m->keys[i]) & (nc - 1);
      while (nk[j]) j = (j + 1) & (nc - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
  }
  size_t j = hash_str(key) & (m->cap - 1);
  while (m->keys[j] && strcmp(m->keys[j], key)) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) m->n++;
  m->keys[j] = key;
  m->vals[j] = val;
  return 1;
}

void sm__smap_free(sm_smap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- small helpers --------------------------------------------------------------------------- */
typedef struct ivec {
  int *v;
  int n, cap;
} ivec;

static int ivec_push(ivec *a, int x) {
  if (a->n == a->cap) {
    int nc = a->cap ? a->cap * 2 : 8;
    int *nv = realloc(a->v, (size_t)nc * sizeof *nv);
    if (!nv) return 0;
    a->v = nv;
    a->cap = nc;
  }
  a->v[a->n++] = x;
  return 1;
}

typedef struct evec {
  sm_edge *v;
  int n, cap;
} evec;

static int evec_push(evec *a, sm_edge e) {
  if (a->n == a->cap) {
    int nc = a->cap ? a->cap * 2 : 8;
    sm_edge *nv = realloc(a->v, (size_t)nc * sizeof *nv);
    if (!nv) return 0;
    a->v = nv;
    a->cap = nc;
  }
  a->v[a->n++] = e;
  return 1;
}

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory compiling the graph"); }

static char *cat2(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

/* Parses a non-negative decimal index that fits an int; -1 otherwise. */
static int parse_index(const char *s, size_t len) {
  if (!len || len > 9) return -1;
  int v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

static const sm_attr_ref *find_attr(const sm_attr_ref *a, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(a[i].name, name)) return &a[i];
  return NULL;
}

/* ---- OpDefs ---------------------------------------------------------------------------------- */
const Tensorflow__OpDef *sm__cgraph_op_def(const sm_cgraph *g, const char *op) {
  if (!g || !op) return NULL;
  int i = sm__smap_get(&g->opdefs, op);
  if (i >= 0) return g->mg->meta_info_def->stripped_op_list->op[i];
  return sm__builtin_op_def(op);
}

/* The kind an attr of OpDef type `type` must have; -1 when not checked (graph_internal.h). */
int sm__attr_kind_for(const char *type) {
  if (!strncmp(type, "list(", 5)) return TENSORFLOW__ATTR_VALUE__VALUE_LIST;
  static const struct {
    const char *t;
    int k;
  } kinds[] = {{"string", TENSORFLOW__ATTR_VALUE__VALUE_S},      {"int", TENSORFLOW__ATTR_VALUE__VALUE_I},
               {"float", TENSORFLOW__ATTR_VALUE__VALUE_F},       {"bool", TENSORFLOW__ATTR_VALUE__VALUE_B},
               {"type", TENSORFLOW__ATTR_VALUE__VALUE_TYPE},     {"shape", TENSORFLOW__ATTR_VALUE__VALUE_SHAPE},
               {"tensor", TENSORFLOW__ATTR_VALUE__VALUE_TENSOR}, {"func", TENSORFLOW__ATTR_VALUE__VALUE_FUNC}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(type, kinds[i].t)) return kinds[i].k;
  return -1;
}

const char *sm__attr_kind_name(int k) {
  switch (k) {
  case TENSORFLOW__ATTR_VALUE__VALUE_LIST: return "a list";
  case TENSORFLOW__ATTR_VALUE__VALUE_S: return "a string";
  case TENSORFLOW__ATTR_VALUE__VALUE_I: return "an int";
  case TENSORFLOW__ATTR_VALUE__VALUE_F: return "a float";
  case TENSORFLOW__ATTR_VALUE__VALUE_B: return "a bool";
  case TENSORFLOW__ATTR_VALUE__VALUE_TYPE: return "a type";
  case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE: return "a shape";
  case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR: return "a tensor";
  case TENSORFLOW__ATTR_VALUE__VALUE_FUNC: return "a function";
  case TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER: return "a placeholder";
  default: return "empty";
  }
}

/* Expands one OpDef arg into its element dtypes (appended to *types), using the node's attrs. */
static sm_status *expand_arg(const char *node, const char *op, const sm_attr_ref *attrs, int nattrs,
                             const Tensorflow__OpDef__ArgDef *a, ivec *types) {
  int count = 1;
  const Tensorflow__AttrValue *list = NULL;
  if (a->number_attr && *a->number_attr) {
    const sm_attr_ref *r = find_attr(attrs, nattrs, a->number_attr);
    if (!r || r->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_I)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): arg '%s' needs int attr '%s', which is %s", node,
                           op, a->name, a->number_attr, r ? sm__attr_kind_name(r->value->value_case) : "missing");
    if (r->value->i < 0 || r->value->i > SM_GRAPH_MAX_ARG_LEN)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' = %lld is not a valid length", node, op,
                           a->number_attr, (long long)r->value->i);
    count = (int)r->value->i;
  } else if (a->type_list_attr && *a->type_list_attr) {
    const sm_attr_ref *r = find_attr(attrs, nattrs, a->type_list_attr);
    if (!r || (r->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST &&
               r->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET))
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): arg '%s' needs list(type) attr '%s', which is %s",
                           node, op, a->name, a->type_list_attr,
                           r ? sm__attr_kind_name(r->value->value_case) : "missing");
    list = r->value;
    count = list->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST ? (int)list->list->n_type : 0;
    if (list->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && list->list->n_type > SM_GRAPH_MAX_ARG_LEN)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' lists too many types", node, op,
                           a->type_list_attr);
  }
  int dt = 0;
  if (!list) {
    if (a->type_attr && *a->type_attr) {
      const sm_attr_ref *r = find_attr(attrs, nattrs, a->type_attr);
      if (!r || r->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE)
        return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): arg '%s' needs type attr '%s', which is %s", node,
                             op, a->name, a->type_attr, r ? sm__attr_kind_name(r->value->value_case) : "missing");
      dt = (int)r->value->type;
    } else {
      dt = (int)a->type;
    }
    if (dt <= 0 || dt >= 200)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): arg '%s' has no valid dtype (%d)", node, op, a->name,
                           dt);
  }
  for (int k = 0; k < count; k++) {
    int t = list ? (int)list->list->type[k] : dt;
    if (list && (t <= 0 || t >= 200))
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' holds an invalid dtype %d", node, op,
                           a->type_list_attr, t);
    if (a->is_ref && t < 100) t += 100;
    if (!ivec_push(types, t)) return oom();
  }
  return NULL;
}

static sm_status *expand_args(const char *node, const char *op, const sm_attr_ref *attrs, int nattrs,
                              Tensorflow__OpDef__ArgDef *const *args, size_t nargs, ivec *types, int *starts) {
  for (size_t i = 0; i < nargs; i++) {
    if (starts) starts[i] = types->n;
    sm_status *s = expand_arg(node, op, attrs, nattrs, args[i], types);
    if (s) return s;
    if (types->n > SM_GRAPH_MAX_ARG_LEN)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): more than %d inputs or outputs", node, op,
                           SM_GRAPH_MAX_ARG_LEN);
  }
  return NULL;
}

/* Flat range of a named arg (for sm__node_input_arg / sm__node_output_arg). */
static int arg_range(const sm_node *n, Tensorflow__OpDef__ArgDef *const *args, size_t nargs, const char *arg,
                     int *count) {
  ivec t = {0};
  int start = -1;
  for (size_t i = 0; i < nargs; i++) {
    int before = t.n;
    sm_status *s = expand_arg(n->name, n->op, n->attrs, n->nattrs, args[i], &t);
    if (s) { /* cannot happen after a successful compile */
      sm_status_free(s);
      break;
    }
    if (!strcmp(args[i]->name, arg)) {
      start = before;
      if (count) *count = t.n - before;
      break;
    }
  }
  free(t.v);
  return start;
}

sm_status *sm__node_arg_dtypes(const sm_node *n, int **in, int *nin, int **out, int *nout) {
  *in = *out = NULL;
  *nin = *nout = 0;
  if (!n->def) return sm_status_new(SM_INTERNAL, "node '%s' (%s) has no OpDef", n->name, n->op);
  ivec i = {0}, o = {0};
  sm_status *s = expand_args(n->name, n->op, n->attrs, n->nattrs, n->def->input_arg, n->def->n_input_arg, &i, NULL);
  if (!s) s = expand_args(n->name, n->op, n->attrs, n->nattrs, n->def->output_arg, n->def->n_output_arg, &o, NULL);
  if (s) {
    free(i.v);
    free(o.v);
    return s;
  }
  *in = i.v;
  *nin = i.n;
  *out = o.v;
  *nout = o.n;
  return NULL;
}

int sm__node_input_arg(const sm_node *n, const char *arg, int *count) {
  if (!n || !n->def || !arg) return -1;
  return arg_range(n, n->def->input_arg, n->def->n_input_arg, arg, count);
}

int sm__node_output_arg(const sm_node *n, const char *arg, int *count) {
  if (!n || !n->def || !arg) return -1;
  return arg_range(n, n->def->output_arg, n->def->n_output_arg, arg, count);
}

/* ---- compilation ----------------------------------------------------------------------------- */
/* Output arg layout of one node of a scope, for "node:out_arg:k" references. */
typedef struct argspan {
  const char *name;
  int start, count;
} argspan;

typedef struct scope {
  const char *prefix; /* "" for the GraphDef, "<call>/" for a body */
  const Tensorflow__FunctionDef *fdef; /* NULL for the GraphDef */
  const char *fname;
  Tensorflow__NodeDef *const *nodes;
  size_t nnodes;
  int first; /* global index of nodes[0] */
  /* function arguments: name -> edges */
  size_t nargs;
  const char **arg_names;
  int *arg_start, *arg_count;
  sm_edge *arg_edges;
  /* attr placeholder bindings */
  const sm_attr_ref *ctx;
  int nctx;
  /* control inputs of the call, given to every body node with no input from the body */
  const int *entry_ctl;
  int nentry_ctl;
  int depth;
  const struct scope *parent;
  /* per-scope-node output layouts */
  argspan **spans;
  int *nspans;
  /* per-scope-node call info */
  const Tensorflow__FunctionDef **callee;
  sm_attr_ref **callee_ctx;
  int *ncallee_ctx;
} scope;

typedef struct cctx {
  sm_cgraph *g;
  const Tensorflow__FunctionDefLibrary *lib;
} cctx;

static sm_status *compile_scope(cctx *c, scope *sc);
static void scope_free(scope *sc);

static const char *call_where(const scope *sc) { return sc->fname ? sc->fname : "the graph"; }

/* The value of an attr after placeholder substitution. */
static sm_status *subst(const scope *sc, const char *node, const char *attr, const Tensorflow__AttrValue *v,
                        const Tensorflow__AttrValue **out) {
  if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER) {
    *out = v;
    return NULL;
  }
  const sm_attr_ref *r = v->placeholder ? find_attr(sc->ctx, sc->nctx, v->placeholder) : NULL;
  if (!r)
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': attr '%s' refers to $%s, which the call of '%s' does not bind",
                         sc->prefix, node, attr, v->placeholder ? v->placeholder : "", call_where(sc));
  *out = r->value;
  return NULL;
}

static const Tensorflow__FunctionDef *find_function(const cctx *c, const char *name) {
  int i = sm__smap_get(&c->g->funcs, name);
  return i < 0 ? NULL : c->lib->function[i];
}

/* Binds a function's signature attrs: the call's values, then the signature's defaults. */
static sm_status *bind_ctx(const scope *sc, const char *node, const Tensorflow__FunctionDef *f,
                           Tensorflow__NameAttrList__AttrEntry *const *entries, size_t nentries,
                           const sm_attr_ref *node_attrs, int nnode_attrs, sm_attr_ref **out, int *nout) {
  size_t nsig = f->signature->n_attr;
  size_t cap = nentries + (size_t)nnode_attrs + nsig;
  sm_attr_ref *a = malloc((cap ? cap : 1) * sizeof *a);
  if (!a) return oom();
  int n = 0;
  for (size_t i = 0; i < nentries; i++) {
    if (!entries[i]->key || !entries[i]->value) continue;
    sm_status *s = subst(sc, node, entries[i]->key, entries[i]->value, &a[n].value);
    if (s) {
      free(a);
      return s;
    }
    a[n++].name = entries[i]->key;
  }
  for (int i = 0; i < nnode_attrs; i++) a[n++] = node_attrs[i];
  for (size_t i = 0; i < nsig; i++) {
    const Tensorflow__OpDef__AttrDef *d = f->signature->attr[i];
    if (!find_attr(a, n, d->name) && d->default_value) {
      a[n].name = d->name;
      a[n++].value = d->default_value;
    }
  }
  *out = a;
  *nout = n;
  return NULL;
}

static sm_status *add_edges(cctx *c, int64_t k) {
  c->g->nedges += k;
  if (c->g->nedges > SM_GRAPH_MAX_EDGES)
    return sm_status_new(SM_OUT_OF_RANGE, "graph has more than %d inputs and outputs after inlining functions", SM_GRAPH_MAX_EDGES);
  int64_t bytes = k * (int64_t)(sizeof(sm_edge) + sizeof(int));
  sm_status *s = sm__load_budget_take(c->g->budget, 0, bytes, "graph edges");
  if (!s) c->g->charged_bytes += bytes;
  return s;
}

/* A shape attr as TensorFlow's PartialTensorShape::IsValidShape checks it when the graph is imported
 * (shape inference refuses the whole graph, whether or not the node is ever run): an unknown rank
 * with dims, a dim below -1, more than 254 dims, or more than 2**63 - 1 elements. A fed Placeholder
 * never reads its own shape attr, so without this a hostile dim would pass unnoticed. */
static sm_status *check_shape(const char *node, const char *op, const char *attr, const Tensorflow__TensorShapeProto *p) {
  if (!p) return NULL;
  char txt[96];
  size_t at = 0;
  txt[0] = 0;
  for (size_t i = 0; i < p->n_dim && at < sizeof txt - 24; i++) {
    int64_t d = p->dim[i] ? p->dim[i]->size : 0;
    at += (size_t)snprintf(txt + at, sizeof txt - at, d == -1 ? "%s?" : "%s%lld", i ? "," : "", (long long)d);
  }
  if (at >= sizeof txt - 24) snprintf(txt + at, sizeof txt - at, ",...");
  if (p->unknown_rank) {
    if (p->n_dim > 0)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "node '%s' (%s): attr '%s': An unknown shape must not have any dimensions set.", node, op,
                           attr);
    return NULL;
  }
  if (p->n_dim > 254)
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s': Shape [%s] has too many dimensions", node,
                         op, attr, txt);
  int64_t n = 1;
  for (size_t i = 0; i < p->n_dim; i++) {
    int64_t d = p->dim[i] ? p->dim[i]->size : 0;
    if (d < -1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "node '%s' (%s): attr '%s': Shape [%s] has dimensions with values below -1 (where -1 "
                           "means unknown)",
                           node, op, attr, txt);
    if (d == -1)
      n = -1;
    else if (n >= 0 && d > 0 && n > INT64_MAX / d)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "node '%s' (%s): attr '%s': Shape [%s] is too large (more than 2**63 - 1 entries)", node,
                           op, attr, txt);
    else if (n >= 0)
      n *= d;
  }
  return NULL;
}

static sm_status *check_shape_attr(const char *node, const char *op, const char *attr, const Tensorflow__AttrValue *v) {
  if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE) return check_shape(node, op, attr, v->shape);
  if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && v->list)
    for (size_t i = 0; i < v->list->n_shape; i++) {
      sm_status *s = check_shape(node, op, attr, v->list->shape[i]);
      if (s) return s;
    }
  return NULL;
}

/* Appends a zeroed node named `name` (taken over: freed with the graph, or here on failure) and
 * indexes its name. */
static sm_status *push_node(sm_cgraph *g, char *name, sm_node **out) {
  *out = NULL;
  if (g->n >= sm__graph_max_nodes) {
    sm_status *s = sm_status_new(SM_OUT_OF_RANGE, "graph has more than %d nodes after inlining functions (at '%.200s')",
                                 sm__graph_max_nodes, name);
    free(name);
    return s;
  }
  int64_t bytes = (int64_t)(sizeof(sm_node) + strlen(name) + 1);
  if (g->budget) {
    sm_status *s = sm__load_budget_take(g->budget, 1, bytes, NULL);
    if (s) {
      s = sm_status_prefix(s, "node '%.200s'", name);
      free(name);
      return s;
    }
    g->charged_nodes++;
    g->charged_bytes += bytes;
  }
  if (g->n == g->cap) {
    int nc = g->cap ? g->cap * 2 : 64;
    sm_node *nn = realloc(g->nodes, (size_t)nc * sizeof *nn);
    if (!nn) {
      free(name);
      return oom();
    }
    g->nodes = nn;
    g->cap = nc;
  }
  sm_node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  n->name = name;
  g->n++;
  if (sm__smap_get(&g->names, n->name) >= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "two nodes are named '%s'", n->name);
  if (!sm__smap_put(&g->names, n->name, g->n - 1)) return oom();
  *out = n;
  return NULL;
}

static sm_status *add_node(cctx *c, const scope *sc, size_t k) {
  sm_cgraph *g = c->g;
  const Tensorflow__NodeDef *nd = sc->nodes[k];
  const char *lname = nd->name ? nd->name : "";
  if (!*lname || strchr(lname, ':') || lname[0] == '^')
    return sm_status_new(SM_INVALID_ARGUMENT, "node #%zu of %s has an invalid name '%s'", k, call_where(sc), lname);
  if (!nd->op || !*nd->op)
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s' has no op", sc->prefix, lname);
  char *full = cat2(sc->prefix, lname);
  if (!full) return oom();
  sm_node *n;
  sm_status *ps = push_node(g, full, &n); /* from here the node is owned by g, whatever fails */
  if (ps) return ps;
  n->op = nd->op;
  n->device = nd->device ? nd->device : "";

  /* A call: PartitionedCall / StatefulPartitionedCall (f), or a node whose op is a function. */
  const Tensorflow__FunctionDef *callee = find_function(c, nd->op);
  int direct = callee != NULL;
  if (!direct) {
    n->def = sm__cgraph_op_def(g, nd->op);
    if (!n->def)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "node '%s': op '%s' is unknown (no OpDef in the graph's stripped_op_list, none built in, "
                           "no such function)",
                           n->name, nd->op);
  }

  /* attrs: the node's own (placeholders substituted), then OpDef defaults */
  size_t ndef_attrs = n->def ? n->def->n_attr : 0;
  n->attrs = malloc((nd->n_attr + ndef_attrs + 1) * sizeof *n->attrs);
  if (!n->attrs) return oom();
  for (size_t i = 0; i < nd->n_attr; i++) {
    const Tensorflow__NodeDef__AttrEntry *e = nd->attr[i];
    if (!e->key || !e->value) continue;
    if (find_attr(n->attrs, n->nattrs, e->key))
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s': attr '%s' given twice", n->name, e->key);
    sm_status *s = subst(sc, lname, e->key, e->value, &n->attrs[n->nattrs].value);
    if (!s) s = check_shape_attr(n->name, nd->op, e->key, n->attrs[n->nattrs].value);
    if (s) return s;
    n->attrs[n->nattrs++].name = e->key;
  }
  for (size_t i = 0; i < ndef_attrs; i++) {
    const Tensorflow__OpDef__AttrDef *d = n->def->attr[i];
    const sm_attr_ref *r = find_attr(n->attrs, n->nattrs, d->name);
    if (!r) {
      if (!d->default_value)
        return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): required attr '%s' is missing", n->name, nd->op,
                             d->name);
      n->attrs[n->nattrs].name = d->name;
      n->attrs[n->nattrs++].value = d->default_value;
      continue;
    }
    int want = sm__attr_kind_for(d->type ? d->type : "");
    int got = r->value->value_case;
    if (want >= 0 && got != want && !(want == TENSORFLOW__ATTR_VALUE__VALUE_LIST && got == 0))
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' should be %s (%s), but is %s", n->name,
                           nd->op, d->name, sm__attr_kind_name(want), d->type, sm__attr_kind_name(got));
  }

  sm_attr_ref *cctx_attrs = NULL;
  int ncctx = 0;
  if (!direct && (!strcmp(nd->op, "StatefulPartitionedCall") || !strcmp(nd->op, "PartitionedCall"))) {
    const sm_attr_ref *f = find_attr(n->attrs, n->nattrs, "f");
    if (!f || f->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !f->value->func || !f->value->func->name)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr 'f' is not a function", n->name, nd->op);
    callee = find_function(c, f->value->func->name);
    if (!callee)
      return sm_status_new(SM_NOT_FOUND, "node '%s' (%s): function '%s' is not in the graph's library", n->name,
                           nd->op, f->value->func->name);
    sm_status *s = bind_ctx(sc, lname, callee, f->value->func->attr, f->value->func->n_attr, NULL, 0, &cctx_attrs,
                            &ncctx);
    if (s) return s;
  } else if (direct) {
    sm_status *s = bind_ctx(sc, lname, callee, NULL, 0, n->attrs, n->nattrs, &cctx_attrs, &ncctx);
    if (s) return s;
  }
  sc->callee[k] = callee;
  sc->callee_ctx[k] = cctx_attrs;
  sc->ncallee_ctx[k] = ncctx;

  /* dtypes and output layout */
  const Tensorflow__OpDef *layout = direct ? callee->signature : n->def;
  const sm_attr_ref *la = direct ? cctx_attrs : n->attrs;
  int nla = direct ? ncctx : n->nattrs;
  ivec in = {0}, out = {0};
  int *starts = malloc((layout->n_output_arg + 1) * sizeof *starts);
  if (!starts) return oom();
  sm_status *s = expand_args(n->name, nd->op, la, nla, layout->input_arg, layout->n_input_arg, &in, NULL);
  if (!s) s = expand_args(n->name, nd->op, la, nla, layout->output_arg, layout->n_output_arg, &out, starts);
  if (!s) {
    sc->spans[k] = malloc((layout->n_output_arg + 1) * sizeof(argspan));
    if (!sc->spans[k]) s = oom();
  }
  if (s) {
    free(in.v);
    free(out.v);
    free(starts);
    return s;
  }
  for (size_t i = 0; i < layout->n_output_arg; i++) {
    sc->spans[k][i].name = layout->output_arg[i]->name;
    sc->spans[k][i].start = starts[i];
    sc->spans[k][i].count = (i + 1 < layout->n_output_arg ? starts[i + 1] : out.n) - starts[i];
  }
  sc->nspans[k] = (int)layout->n_output_arg;
  free(starts);
  /* Counted here, before any input is resolved: a scope of nodes declaring a million-long list
   * each would otherwise take gigabytes before the first count mismatch shows. */
  s = add_edges(c, (int64_t)in.n + out.n);
  n->in_dtypes = in.v;
  n->ninputs = in.n; /* expected count; the inputs themselves come in resolve_node */
  n->out_dtypes = out.v;
  n->noutputs = out.n;
  n->stateful = direct ? 1 : n->def->is_stateful;
  return s;
}

/* Resolves one input reference of a scope node into edges (a list arg gives several). */
static sm_status *resolve_ref(cctx *c, const scope *sc, const char *node, const char *ref, evec *out) {
  sm_cgraph *g = c->g;
  size_t len = strlen(ref);
  if (!sc->fdef) { /* GraphDef: "n" or "n:k" */
    const char *colon = strrchr(ref, ':');
    int k = 0;
    size_t nlen = len;
    if (colon && (k = parse_index(colon + 1, len - (size_t)(colon + 1 - ref))) >= 0) {
      nlen = (size_t)(colon - ref);
    } else {
      k = 0;
    }
    char *name = strndup(ref, nlen);
    if (!name) return oom();
    int idx = sm__smap_get(&g->names, name);
    free(name);
    if (idx < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s': input '%s' names no node in the graph", node, ref);
    if (k >= g->nodes[idx].noutputs)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s': input '%s' is out of range (node '%s' has %d outputs)",
                           node, ref, g->nodes[idx].name, g->nodes[idx].noutputs);
    return evec_push(out, (sm_edge){idx, k}) ? NULL : oom();
  }
  /* FunctionDef body: "arg", "arg:k", "node:out_arg", "node:out_arg:k" */
  const char *c1 = strchr(ref, ':');
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (c2 && strchr(c2 + 1, ':'))
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s' is not a valid reference", sc->prefix, node,
                         ref);
  size_t alen = c1 ? (size_t)(c1 - ref) : len;
  for (size_t a = 0; a < sc->nargs && !c2; a++) {
    if (strlen(sc->arg_names[a]) != alen || strncmp(sc->arg_names[a], ref, alen)) continue;
    if (!c1) {
      for (int i = 0; i < sc->arg_count[a]; i++)
        if (!evec_push(out, sc->arg_edges[sc->arg_start[a] + i])) return oom();
      return NULL;
    }
    int k = parse_index(c1 + 1, strlen(c1 + 1));
    if (k >= 0) {
      if (k >= sc->arg_count[a])
        return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s' is out of range (argument '%s' has %d)",
                             sc->prefix, node, ref, sc->arg_names[a], sc->arg_count[a]);
      return evec_push(out, sc->arg_edges[sc->arg_start[a] + k]) ? NULL : oom();
    }
  }
  if (!c1)
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s' is no argument of function '%s'", sc->prefix,
                         node, ref, sc->fname);
  char *name = malloc(strlen(sc->prefix) + alen + 1);
  if (!name) return oom();
  memcpy(name, sc->prefix, strlen(sc->prefix));
  memcpy(name + strlen(sc->prefix), ref, alen);
  name[strlen(sc->prefix) + alen] = 0;
  int idx = sm__smap_get(&g->names, name);
  free(name);
  if (idx < sc->first || idx >= sc->first + (int)sc->nnodes)
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s' names no node of function '%s'", sc->prefix,
                         node, ref, sc->fname);
  size_t li = (size_t)(idx - sc->first);
  const char *arg = c1 + 1;
  size_t arglen = c2 ? (size_t)(c2 - arg) : strlen(arg);
  for (int i = 0; i < sc->nspans[li]; i++) {
    const argspan *sp = &sc->spans[li][i];
    if (strlen(sp->name) != arglen || strncmp(sp->name, arg, arglen)) continue;
    if (!c2) {
      for (int j = 0; j < sp->count; j++)
        if (!evec_push(out, (sm_edge){idx, sp->start + j})) return oom();
      return NULL;
    }
    int k = parse_index(c2 + 1, strlen(c2 + 1));
    if (k < 0 || k >= sp->count)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s' is out of range (output '%s' has %d)",
                           sc->prefix, node, ref, sp->name, sp->count);
    return evec_push(out, (sm_edge){idx, sp->start + k}) ? NULL : oom();
  }
  return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': input '%s': op %s has no output '%.*s'", sc->prefix, node,
                       ref, g->nodes[idx].op, (int)arglen, arg);
}

static sm_status *resolve_control(cctx *c, const scope *sc, const char *node, const char *name, ivec *out) {
  sm_cgraph *g = c->g;
  if (sc->fdef)
    for (size_t a = 0; a < sc->nargs; a++)
      if (!strcmp(sc->arg_names[a], name)) { /* after an argument: after what produces it */
        for (int i = 0; i < sc->arg_count[a]; i++)
          if (!ivec_push(out, sc->arg_edges[sc->arg_start[a] + i].node)) return oom();
        return NULL;
      }
  char *full = cat2(sc->prefix, name);
  if (!full) return oom();
  int idx = sm__smap_get(&g->names, full);
  free(full);
  if (idx < 0 || (sc->fdef && (idx < sc->first || idx >= sc->first + (int)sc->nnodes)))
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s%s': control input '^%s' names no node of %s", sc->prefix,
                         node, name, call_where(sc));
  return ivec_push(out, idx) ? NULL : oom();
}


/* A compiled body's return values (flat, in signature order), appended to *rets. */
static sm_status *body_rets(cctx *c, scope *b, evec *rets) {
  const Tensorflow__FunctionDef *f = b->fdef;
  sm_status *s = NULL;
  for (size_t o = 0; o < f->signature->n_output_arg && !s; o++) {
    const char *oname = f->signature->output_arg[o]->name;
    const char *val = NULL;
    for (size_t r = 0; r < f->n_ret; r++)
      if (f->ret[r]->key && !strcmp(f->ret[r]->key, oname)) val = f->ret[r]->value;
    if (!val) return sm_status_new(SM_INVALID_ARGUMENT, "function '%s': output '%s' has no ret value", b->fname, oname);
    s = resolve_ref(c, b, "(ret)", val, rets);
  }
  return s;
}

/* A compiled body's control outputs, appended to *ctl: its control_ret nodes, or every stateful
 * node of the body when the FunctionDef lists none. */
static sm_status *body_control_rets(cctx *c, scope *b, ivec *ctl) {
  const Tensorflow__FunctionDef *f = b->fdef;
  sm_status *s = NULL;
  if (f->n_control_ret) {
    for (size_t r = 0; r < f->n_control_ret && !s; r++)
      if (f->control_ret[r]->value) s = resolve_control(c, b, "(control_ret)", f->control_ret[r]->value, ctl);
    return s;
  }
  for (size_t i = 0; i < b->nnodes; i++)
    if (c->g->nodes[b->first + (int)i].stateful && !ivec_push(ctl, b->first + (int)i)) return oom();
  return NULL;
}

/* A fault deep in nested calls gets one "inlining 'f' into 'node'" frame per level, and node
 * names grow with the depth: past INLINE_MSG_MAX bytes the message keeps its outermost frames
 * (the head, at most INLINE_HEAD bytes) and the fault itself (the tail), the frames between
 * summarised, so a chain of any depth reads in a line. */
#define INLINE_MSG_MAX 1024
#define INLINE_HEAD 512
#define INLINE_TAIL 384
static const char elided[] = " [... inner call frames elided ...] ";

static sm_status *inline_frame(sm_status *s, const char *fname, const char *node) {
  s = sm_status_prefix(s, "inlining '%.200s' into '%.200s'", fname, node);
  const char *m = sm_status_message(s);
  size_t n = strlen(m);
  if (n <= INLINE_MSG_MAX || sm_status_code(s) == SM_NO_MEMORY) return s;
  const char *cut = strstr(m, elided);
  size_t head = cut ? (size_t)(cut - m) : INLINE_HEAD;
  const char *tail = cut ? cut + sizeof elided - 1 : m + n - INLINE_TAIL;
  if (head > INLINE_HEAD) head = INLINE_HEAD;
  if (!cut) { /* start the tail at a frame's start when one is near */
    const char *f = strstr(tail, ": ");
    if (f && f - tail < INLINE_TAIL / 2) tail = f + 2;
  }
  /* end the head after a whole frame when one fits */
  for (size_t k = head; k > INLINE_HEAD / 2; k--)
    if (m[k - 1] == ' ' && m[k - 2] == ':') {
      head = k - 2;
      break;
    }
  sm_status *t = sm_status_new(sm_status_code(s), "%.*s%s%s", (int)head, m, elided, tail);
  if (sm_status_code(t) == SM_NO_MEMORY && sm_status_code(s) != SM_NO_MEMORY) return s; /* keep the long one */
  sm_status_free(s);
  return t;
}

/* A call node becomes IdentityN over the body's return values. */
static sm_status *inline_call(cctx *c, const scope *sc, size_t k) {
  sm_cgraph *g = c->g;
  int idx = sc->first + (int)k;
  const Tensorflow__FunctionDef *f = sc->callee[k];
  const char *fname = f->signature->name;
  for (const scope *p = sc; p; p = p->parent)
    if (p->fname && !strcmp(p->fname, fname))
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s': function '%s' calls itself (recursion is not supported)",
                           g->nodes[idx].name, fname);
  if (sc->depth + 1 > SM_GRAPH_MAX_INLINE_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "node '%s': function calls nest deeper than %d", g->nodes[idx].name,
                         SM_GRAPH_MAX_INLINE_DEPTH);
  scope b = {0};
  b.fdef = f;
  b.fname = fname;
  b.nodes = f->node_def;
  b.nnodes = f->n_node_def;
  b.ctx = sc->callee_ctx[k];
  b.nctx = sc->ncallee_ctx[k];
  b.depth = sc->depth + 1;
  b.parent = sc;
  b.entry_ctl = g->nodes[idx].control;
  b.nentry_ctl = g->nodes[idx].ncontrol;
  sm_status *s = NULL;
  char *prefix = cat2(g->nodes[idx].name, "/");
  size_t na = f->signature->n_input_arg;
  b.arg_names = malloc((na + 1) * sizeof *b.arg_names);
  b.arg_start = malloc((na + 1) * sizeof *b.arg_start);
  b.arg_count = malloc((na + 1) * sizeof *b.arg_count);
  ivec types = {0};
  if (!prefix || !b.arg_names || !b.arg_start || !b.arg_count) {
    s = oom();
    goto done;
  }
  b.prefix = prefix;
  b.nargs = na;
  s = expand_args(g->nodes[idx].name, fname, b.ctx, b.nctx, f->signature->input_arg, na, &types, b.arg_start);
  if (s) goto done;
  if (types.n != g->nodes[idx].ninputs) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "node '%s': function '%s' takes %d inputs, the call gives %d",
                      g->nodes[idx].name, fname, types.n, g->nodes[idx].ninputs);
    goto done;
  }
  for (size_t a = 0; a < na; a++) {
    b.arg_names[a] = f->signature->input_arg[a]->name;
    b.arg_count[a] = (a + 1 < na ? b.arg_start[a + 1] : types.n) - b.arg_start[a];
  }
  b.arg_edges = g->nodes[idx].inputs;
  s = compile_scope(c, &b);
  if (s) goto done;

  evec rets = {0};
  ivec ctl = {0};
  s = body_rets(c, &b, &rets);
  if (!s && rets.n != g->nodes[idx].noutputs)
    s = sm_status_new(SM_INVALID_ARGUMENT, "node '%s': function '%s' returns %d values, the call expects %d",
                      g->nodes[idx].name, fname, rets.n, g->nodes[idx].noutputs);
  for (int i = 0; i < g->nodes[idx].ncontrol && !s; i++)
    if (!ivec_push(&ctl, g->nodes[idx].control[i])) s = oom();
  if (!s) s = body_control_rets(c, &b, &ctl);
  if (!s) s = add_edges(c, rets.n + ctl.n - g->nodes[idx].ncontrol);
  /* An IdentityN "T" attr, made here, with the call's output dtypes. */
  struct owned_t {
    Tensorflow__AttrValue av;
    Tensorflow__AttrValue__ListValue lv;
    Tensorflow__DataType types[];
  } *ot = NULL;
  const Tensorflow__OpDef *idn = NULL;
  if (!s) {
    idn = sm__cgraph_op_def(g, "IdentityN");
    ot = calloc(1, sizeof *ot + ((size_t)rets.n + 1) * sizeof(Tensorflow__DataType));
    if (!idn)
      s = sm_status_new(SM_INTERNAL, "no OpDef for IdentityN");
    else if (!ot)
      s = oom();
  }
  if (s) {
    free(rets.v);
    free(ctl.v);
    free(ot);
    goto done;
  }
  tensorflow__attr_value__init(&ot->av);
  tensorflow__attr_value__list_value__init(&ot->lv);
  ot->av.value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
  ot->av.list = &ot->lv;
  ot->lv.n_type = (size_t)rets.n;
  ot->lv.type = ot->types;
  sm_node *n = &g->nodes[idx];
  for (int i = 0; i < rets.n; i++) {
    int t = n->out_dtypes[i] >= 100 ? n->out_dtypes[i] - 100 : n->out_dtypes[i];
    ot->types[i] = (Tensorflow__DataType)t;
  }
  int *ind = realloc(n->in_dtypes, ((size_t)rets.n + 1) * sizeof *ind);
  if (!ind) {
    free(rets.v);
    free(ctl.v);
    free(ot);
    s = oom();
    goto done;
  }
  for (int i = 0; i < rets.n; i++) ind[i] = (int)ot->types[i];
  n->in_dtypes = ind;
  free(n->inputs);
  n->inputs = rets.v;
  n->ninputs = rets.n;
  free(n->control);
  n->control = ctl.v;
  n->ncontrol = ctl.n;
  n->op = "IdentityN";
  n->def = idn;
  n->owned = ot;
  n->attrs[0].name = "T";
  n->attrs[0].value = &ot->av;
  n->nattrs = 1;
done:
  scope_free(&b);
  free(types.v);
  free(prefix);
  free(b.arg_names);
  free(b.arg_start);
  free(b.arg_count);
  /* a budget refusal names its node already: the chain of calls down to it would run to kilobytes */
  if (s && sm_status_code(s) != SM_RESOURCE_EXHAUSTED) s = inline_frame(s, fname, g->nodes[idx].name);
  return s;
}

static sm_status *resolve_node(cctx *c, scope *sc, size_t k) {
  sm_cgraph *g = c->g;
  const Tensorflow__NodeDef *nd = sc->nodes[k];
  int idx = sc->first + (int)k;
  evec in = {0};
  ivec ctl = {0};
  sm_status *s = NULL;
  for (size_t i = 0; i < nd->n_input && !s; i++) {
    const char *r = nd->input[i] ? nd->input[i] : "";
    if (r[0] == '^')
      s = resolve_control(c, sc, nd->name, r + 1, &ctl);
    else
      s = resolve_ref(c, sc, nd->name, r, &in);
  }
  if (!s && in.n != g->nodes[idx].ninputs)
    s = sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s) has %d data inputs, its OpDef wants %d", g->nodes[idx].name,
                      nd->op, in.n, g->nodes[idx].ninputs);
  if (!s && sc->nentry_ctl) { /* a body root waits for the call's control inputs */
    int root = 1;
    int lo = sc->first, hi = sc->first + (int)sc->nnodes;
    for (int i = 0; i < in.n && root; i++)
      if (in.v[i].node >= lo && in.v[i].node < hi) root = 0;
    for (int i = 0; i < ctl.n && root; i++)
      if (ctl.v[i] >= lo && ctl.v[i] < hi) root = 0;
    for (int i = 0; i < sc->nentry_ctl && root && !s; i++)
      if (!ivec_push(&ctl, sc->entry_ctl[i])) s = oom();
  }
  if (!s) s = add_edges(c, ctl.n);
  if (s) {
    free(in.v);
    free(ctl.v);
    return s;
  }
  g->nodes[idx].inputs = in.v;
  g->nodes[idx].control = ctl.v;
  g->nodes[idx].ncontrol = ctl.n;
  if (sc->callee[k]) return inline_call(c, sc, k);
  return NULL;
}

static sm_status *compile_scope(cctx *c, scope *sc) {
  sm_status *s = NULL;
  size_t nn = sc->nnodes;
  sc->first = c->g->n;
  sc->spans = calloc(nn + 1, sizeof *sc->spans);
  sc->nspans = calloc(nn + 1, sizeof *sc->nspans);
  sc->callee = calloc(nn + 1, sizeof *sc->callee);
  sc->callee_ctx = calloc(nn + 1, sizeof *sc->callee_ctx);
  sc->ncallee_ctx = calloc(nn + 1, sizeof *sc->ncallee_ctx);
  if (!sc->spans || !sc->nspans || !sc->callee || !sc->callee_ctx || !sc->ncallee_ctx) s = oom();
  size_t made = 0;
  for (; made < nn && !s; made++) {
    if (!sc->nodes[made]) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "node #%zu of %s is empty", made, call_where(sc));
      break;
    }
    s = add_node(c, sc, made);
  }
  for (size_t k = 0; k < nn && !s; k++) s = resolve_node(c, sc, k);
  return s;
}

/* Frees what compile_scope made for the scope (after its return values are resolved). */
static void scope_free(scope *sc) {
  size_t nn = sc->nnodes;
  for (size_t k = 0; k < nn; k++) {
    if (sc->spans) free(sc->spans[k]);
    if (sc->callee_ctx) free(sc->callee_ctx[k]);
  }
  free(sc->spans);
  free(sc->nspans);
  free(sc->callee);
  free(sc->callee_ctx);
  free(sc->ncallee_ctx);
  sc->spans = NULL;
  sc->nspans = NULL;
  sc->callee = NULL;
  sc->callee_ctx = NULL;
  sc->ncallee_ctx = NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static sm_status *collect_ops(sm_cgraph *g, const Tensorflow__GraphDef *gd) {
  size_t total = gd->n_node;
  const Tensorflow__FunctionDefLibrary *lib = gd->library;
  for (size_t i = 0; lib && i < lib->n_function; i++)
    if (lib->function[i]) total += lib->function[i]->n_node_def;
  g->all_ops = malloc((total + 1) * sizeof *g->all_ops);
  if (!g->all_ops) return oom();
  size_t n = 0;
  for (size_t i = 0; i < gd->n_node; i++)
    if (gd->node[i] && gd->node[i]->op) g->all_ops[n++] = gd->node[i]->op;
  for (size_t i = 0; lib && i < lib->n_function; i++)
    for (size_t j = 0; lib->function[i] && j < lib->function[i]->n_node_def; j++)
      if (lib->function[i]->node_def[j] && lib->function[i]->node_def[j]->op)
        g->all_ops[n++] = lib->function[i]->node_def[j]->op;
  qsort(g->all_ops, n, sizeof *g->all_ops, cmp_str);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || strcmp(g->all_ops[u - 1], g->all_ops[i])) g->all_ops[u++] = g->all_ops[i];
  g->nall_ops = (int)u;
  return NULL;
}

/* An empty graph over mg with its OpDef and function indexes; *gd is mg's GraphDef (an empty one
 * when it has none). On failure *out is NULL. */
static sm_status *graph_new(const Tensorflow__MetaGraphDef *mg, const Tensorflow__GraphDef **gdp, sm_cgraph **out) {
  *out = NULL;
  sm_cgraph *g = calloc(1, sizeof *g);
  if (!g) return oom();
  g->mg = mg;
  g->budget = sm__load_budget_current();
  sm_status *s = NULL;
  static const Tensorflow__GraphDef empty_gd; /* no nodes, no library; only those fields are read */
  const Tensorflow__GraphDef *gd = mg->graph_def ? mg->graph_def : &empty_gd;
  *gdp = gd;
  const Tensorflow__OpList *ol = mg->meta_info_def ? mg->meta_info_def->stripped_op_list : NULL;
  for (size_t i = 0; ol && i < ol->n_op && !s; i++)
    if (ol->op[i] && ol->op[i]->name && sm__smap_get(&g->opdefs, ol->op[i]->name) < 0 &&
        !sm__smap_put(&g->opdefs, ol->op[i]->name, (int)i))
      s = oom();
  if (ol)
    for (size_t i = 0; i < ol->n_op; i++)
      if (!ol->op[i] || !ol->op[i]->name) /* a hole would make sm__cgraph_op_def unsafe */
        s = s ? s : sm_status_new(SM_INVALID_ARGUMENT, "stripped_op_list entry #%zu has no name", i);
  const Tensorflow__FunctionDefLibrary *lib = gd->library;
  for (size_t i = 0; lib && i < lib->n_function && !s; i++) {
    const Tensorflow__FunctionDef *f = lib->function[i];
    if (!f || !f->signature || !f->signature->name || !*f->signature->name)
      s = sm_status_new(SM_INVALID_ARGUMENT, "library function #%zu has no signature name", i);
    else if (sm__smap_get(&g->funcs, f->signature->name) >= 0)
      s = sm_status_new(SM_INVALID_ARGUMENT, "library defines function '%s' twice", f->signature->name);
    else if (!sm__smap_put(&g->funcs, f->signature->name, (int)i))
      s = oom();
  }
  if (s) {
    sm__cgraph_free(g);
    return s;
  }
  *out = g;
  return NULL;
}

sm_status *sm__cgraph_compile(const Tensorflow__MetaGraphDef *mg, sm_cgraph **out) {
  *out = NULL;
  if (!mg) return sm_status_new(SM_INVALID_ARGUMENT, "sm__cgraph_compile: no MetaGraphDef");
  const Tensorflow__GraphDef *gd;
  sm_cgraph *g;
  sm_status *s = graph_new(mg, &gd, &g);
  if (s) return s;
  const Tensorflow__FunctionDefLibrary *lib = gd->library;
  s = collect_ops(g, gd);
  if (!s) {
    cctx c = {g, lib};
    scope top = {0};
    top.prefix = "";
    top.nodes = gd->node;
    top.nnodes = gd->n_node;
    s = compile_scope(&c, &top);
    scope_free(&top);
  }
  if (!s) s = sm__cgraph_functionalize(g);
  if (s) {
    sm__cgraph_free(g);
    return s;
  }
  *out = g;
  return NULL;
}

/* ---- one function as its own graph ----------------------------------------------------------- */
/* The _Arg node of flat input element `index` (one output of `dtype`), named `name` (taken over). */
static sm_status *add_arg_node(cctx *c, char *name, int index, int dtype, int *idx) {
  sm_cgraph *g = c->g;
  sm_node *n;
  sm_status *s = push_node(g, name, &n);
  if (s) return s;
  *idx = g->n - 1;
  struct arg_attrs {
    Tensorflow__AttrValue t, index;
  } *aa = calloc(1, sizeof *aa);
  n->owned = aa;
  n->attrs = malloc(2 * sizeof *n->attrs);
  n->out_dtypes = malloc(sizeof *n->out_dtypes);
  if (!aa || !n->attrs || !n->out_dtypes) return oom();
  tensorflow__attr_value__init(&aa->t);
  aa->t.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
  aa->t.type = (Tensorflow__DataType)(dtype >= 100 ? dtype - 100 : dtype);
  tensorflow__attr_value__init(&aa->index);
  aa->index.value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
  aa->index.i = index;
  n->attrs[0] = (sm_attr_ref){"T", &aa->t};
  n->attrs[1] = (sm_attr_ref){"index", &aa->index};
  n->nattrs = 2;
  n->op = "_Arg";
  n->device = "";
  n->def = sm__cgraph_op_def(g, "_Arg");
  n->stateful = n->def ? n->def->is_stateful : 0;
  n->out_dtypes[0] = dtype;
  n->noutputs = 1;
  return add_edges(c, 1);
}

sm_status *sm__cgraph_compile_function(const Tensorflow__MetaGraphDef *mg, const char *fname, const sm_node *caller,
                                      sm_cgraph **out) {
  *out = NULL;
  if (!mg || !fname) return sm_status_new(SM_INVALID_ARGUMENT, "compile function: no MetaGraphDef or no name");
  const Tensorflow__GraphDef *gd;
  sm_cgraph *g;
  sm_status *s = graph_new(mg, &gd, &g);
  if (s) return s;
  cctx c = {g, gd->library};
  const char *where = caller ? caller->name : fname;
  const Tensorflow__FunctionDef *f = find_function(&c, fname);
  sm_attr_ref *ctx = NULL;
  int nctx = 0;
  ivec types = {0}, ctl = {0};
  evec rets = {0};
  scope top = {0}, b = {0};
  top.prefix = "";
  if (!f) {
    s = sm_status_new(SM_NOT_FOUND, "function '%s' is not in the graph's library", fname);
    goto done;
  }
  /* attrs: those the caller's func attr naming f binds, the caller's own, then f's defaults */
  Tensorflow__NameAttrList__AttrEntry *const *entries = NULL;
  size_t nentries = 0;
  for (int i = 0; caller && i < caller->nattrs && !entries; i++) {
    const Tensorflow__AttrValue *v = caller->attrs[i].value;
    if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && v->func && v->func->name &&
        !strcmp(v->func->name, fname)) {
      entries = v->func->attr;
      nentries = v->func->n_attr;
    }
  }
  s = bind_ctx(&top, where, f, entries, nentries, caller ? caller->attrs : NULL, caller ? caller->nattrs : 0, &ctx,
               &nctx);
  if (s) goto done;
  size_t na = f->signature->n_input_arg;
  b.arg_names = malloc((na + 1) * sizeof *b.arg_names);
  b.arg_start = malloc((na + 1) * sizeof *b.arg_start);
  b.arg_count = malloc((na + 1) * sizeof *b.arg_count);
  if (!b.arg_names || !b.arg_start || !b.arg_count) {
    s = oom();
    goto done;
  }
  s = expand_args(where, fname, ctx, nctx, f->signature->input_arg, na, &types, b.arg_start);
  if (!s && !(g->fn_args = malloc(((size_t)types.n + 1) * sizeof *g->fn_args))) s = oom();
  /* one _Arg node per flat input element: "x" for a single arg, "x_0", "x_1", ... for a list */
  for (size_t a = 0; a < na && !s; a++) {
    const Tensorflow__OpDef__ArgDef *ad = f->signature->input_arg[a];
    b.arg_names[a] = ad->name;
    b.arg_count[a] = (a + 1 < na ? b.arg_start[a + 1] : types.n) - b.arg_start[a];
    int list = (ad->number_attr && *ad->number_attr) || (ad->type_list_attr && *ad->type_list_attr);
    for (int k = 0; k < b.arg_count[a] && !s; k++) {
      int flat = b.arg_start[a] + k, idx;
      size_t len = strlen(ad->name) + 16;
      char *nm = malloc(len);
      if (!nm) {
        s = oom();
        break;
      }
      snprintf(nm, len, list ? "%s_%d" : "%s", ad->name, k);
      if (!(s = add_arg_node(&c, nm, flat, types.v[flat], &idx))) g->fn_args[g->nfn_args++] = (sm_edge){idx, 0};
    }
  }
  if (s) goto done;
  b.prefix = "";
  b.fdef = f;
  b.fname = f->signature->name;
  b.nodes = f->node_def;
  b.nnodes = f->n_node_def;
  b.ctx = ctx;
  b.nctx = nctx;
  b.depth = 1;
  b.nargs = na;
  b.arg_edges = g->fn_args;
  s = compile_scope(&c, &b);
  if (!s) s = body_rets(&c, &b, &rets);
  if (!s) s = body_control_rets(&c, &b, &ctl);
  if (!s) s = add_edges(&c, rets.n + ctl.n);
  if (!s) {
    g->fname = f->signature->name;
    g->fn_rets = rets.v;
    g->nfn_rets = rets.n;
    g->fn_ctl = ctl.v;
    g->nfn_ctl = ctl.n;
    rets.v = NULL;
    ctl.v = NULL;
  }
  if (!s) s = sm__cgraph_functionalize(g);
done:
  scope_free(&b);
  free(b.arg_names);
  free(b.arg_start);
  free(b.arg_count);
  free(ctx);
  free(types.v);
  free(rets.v);
  free(ctl.v);
  if (s) {
    sm__cgraph_free(g);
    return f ? sm_status_prefix(s, "function '%s'", fname) : s;
  }
  *out = g;
  return NULL;
}

const Tensorflow__MetaGraphDef *sm__cgraph_meta_graph(const sm_cgraph *g) { return g ? g->mg : NULL; }
const char *sm__cgraph_function_name(const sm_cgraph *g) { return g ? g->fname : NULL; }

void sm__cgraph_function_args(const sm_cgraph *g, const sm_edge **args, int *n) {
  *args = g ? g->fn_args : NULL;
  *n = g ? g->nfn_args : 0;
}

void sm__cgraph_function_rets(const sm_cgraph *g, const sm_edge **rets, int *n) {
  *rets = g ? g->fn_rets : NULL;
  *n = g ? g->nfn_rets : 0;
}

void sm__cgraph_function_control_rets(const sm_cgraph *g, const int **nodes, int *n) {
  *nodes = g ? g->fn_ctl : NULL;
  *n = g ? g->nfn_ctl : 0;
}

sm_load_budget *sm__cgraph_budget(const sm_cgraph *g) { return g ? g->budget : NULL; }

void sm__cgraph_free(sm_cgraph *g) {
  if (!g) return;
  sm__load_budget_give(g->budget, g->charged_nodes, g->charged_bytes);
  for (int i = 0; i < g->n; i++) {
    sm_node *n = &g->nodes[i];
    free(n->name);
    free(n->inputs);
    free(n->in_dtypes);
    free(n->control);
    free(n->out_dtypes);
    free(n->attrs);
    free(n->owned);
  }
  free(g->nodes);
  sm__smap_free(&g->names);
  sm__smap_free(&g->opdefs);
  sm__smap_free(&g->funcs);
  free(g->all_ops);
  free(g->fn_args);
  free(g->fn_rets);
  free(g->fn_ctl);
  sm__frames_free(g);
  free(g);
}

/* ---- lookups --------------------------------------------------------------------------------- */
int sm__cgraph_num_nodes(const sm_cgraph *g) { return g ? g->n : 0; }
const sm_node *sm__cgraph_node(const sm_cgraph *g, int i) { return g && i >= 0 && i < g->n ? &g->nodes[i] : NULL; }
int sm__cgraph_find(const sm_cgraph *g, const char *name) { return g && name ? sm__smap_get(&g->names, name) : -1; }

const char *const *sm__cgraph_all_ops(const sm_cgraph *g, int *count) {
  if (count) *count = g ? g->nall_ops : 0;
  return g ? g->all_ops : NULL;
}

sm_status *sm__cgraph_resolve(const sm_cgraph *g, const char *tensor_name, sm_edge *out, int *is_control) {
  if (!tensor_name || !*tensor_name) return sm_status_new(SM_INVALID_ARGUMENT, "empty tensor name");
  if (is_control) *is_control = 0;
  const char *name = tensor_name;
  if (name[0] == '^') {
    if (!is_control)
      return sm_status_new(SM_INVALID_ARGUMENT, "'%s' is a control input, not a tensor name", tensor_name);
    *is_control = 1;
    int idx = sm__cgraph_find(g, name + 1);
    if (idx < 0) return sm_status_new(SM_NOT_FOUND, "'%s': the graph has no node '%s'", tensor_name, name + 1);
    *out = (sm_edge){idx, 0};
    return NULL;
  }
  size_t len = strlen(name);
  const char *colon = strrchr(name, ':');
  int k = 0;
  size_t nlen = len;
  if (colon) {
    k = parse_index(colon + 1, len - (size_t)(colon + 1 - name));
    if (k < 0) return sm_status_new(SM_INVALID_ARGUMENT, "'%s' is not a tensor name (node:index)", tensor_name);
    nlen = (size_t)(colon - name);
  }
  char *node = strndup(name, nlen);
  if (!node) return oom();
  int idx = sm__cgraph_find(g, node);
  if (idx < 0) {
    sm_status *s = sm_status_new(SM_NOT_FOUND, "'%s': the graph has no node '%s'", tensor_name, node);
    free(node);
    return s;
  }
  free(node);
  if (k >= g->nodes[idx].noutputs)
    return sm_status_new(SM_INVALID_ARGUMENT, "'%s': node '%s' (%s) has %d outputs%s", tensor_name,
                         g->nodes[idx].name, g->nodes[idx].op, g->nodes[idx].noutputs,
                         g->nodes[idx].noutputs ? "" : "; run it as a target");
  *out = (sm_edge){idx, k};
  return NULL;
}

/* ---- node accessors -------------------------------------------------------------------------- */
const char *sm__node_name(const sm_node *n) { return n->name; }
const char *sm__node_op(const sm_node *n) { return n->op; }
const char *sm__node_device(const sm_node *n) { return n->device; }
int sm__node_num_inputs(const sm_node *n) { return n->ninputs; }
sm_edge sm__node_input(const sm_node *n, int i) {
  return i >= 0 && i < n->ninputs ? n->inputs[i] : (sm_edge){-1, -1};
}
int sm__node_input_dtype(const sm_node *n, int i) { return i >= 0 && i < n->ninputs ? n->in_dtypes[i] : 0; }
int sm__node_num_control_inputs(const sm_node *n) { return n->ncontrol; }
int sm__node_control_input(const sm_node *n, int i) { return i >= 0 && i < n->ncontrol ? n->control[i] : -1; }
int sm__node_num_outputs(const sm_node *n) { return n->noutputs; }
int sm__node_output_dtype(const sm_node *n, int i) { return i >= 0 && i < n->noutputs ? n->out_dtypes[i] : 0; }
int sm__node_is_stateful(const sm_node *n) { return n->stateful; }

const Tensorflow__AttrValue *sm__node_attr(const sm_node *n, const char *name) {
  if (!n || !name) return NULL;
  const sm_attr_ref *r = find_attr(n->attrs, n->nattrs, name);
  return r ? r->value : NULL;
}

/* ---- pruning --------------------------------------------------------------------------------- */
static int cmp_edge(const void *a, const void *b) {
  const sm_edge *x = a, *y = b;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int is_fed(const sm_edge *sorted, int n, sm_edge e) {
  return n && bsearch(&e, sorted, (size_t)n, sizeof e, cmp_edge) != NULL;
}

static sm_status *check_edge(const sm_cgraph *g, sm_edge e, const char *what) {
  if (e.node < 0 || e.node >= g->n || e.index < 0 || e.index >= g->nodes[e.node].noutputs)
    return sm_status_new(SM_INVALID_ARGUMENT, "prune: %s (%d, %d) is not an output of the graph", what, e.node, e.index);
  return NULL;
}

sm_status *sm__cgraph_prune(const sm_cgraph *g, const sm_edge *feeds, int nfeeds, const sm_edge *fetches,
                           int nfetches, const int *targets, int ntargets, int **order, int *n) {
  *order = NULL;
  *n = 0;
  sm_status *s = NULL;
  for (int i = 0; i < nfeeds && !s; i++) s = check_edge(g, feeds[i], "feed");
  for (int i = 0; i < nfetches && !s; i++) s = check_edge(g, fetches[i], "fetch");
  for (int i = 0; i < ntargets && !s; i++)
    if (targets[i] < 0 || targets[i] >= g->n)
      s = sm_status_new(SM_INVALID_ARGUMENT, "prune: target %d is not a node of the graph", targets[i]);
  if (s) return s;
  int nn = g->n;
  sm_edge *fed = malloc(((size_t)nfeeds + 1) * sizeof *fed);
  unsigned char *need = calloc((size_t)nn + 1, 1);
  int *stack = malloc(((size_t)nn + 1) * sizeof *stack);
  int *indeg = calloc((size_t)nn + 1, sizeof *indeg);
  int *ostart = calloc((size_t)nn + 2, sizeof *ostart);
  int *res = malloc(((size_t)nn + 1) * sizeof *res);
  int *adj = NULL;
  if (!fed || !need || !stack || !indeg || !ostart || !res) goto nomem;
  if (nfeeds) memcpy(fed, feeds, (size_t)nfeeds * sizeof *fed);
  qsort(fed, (size_t)nfeeds, sizeof *fed, cmp_edge);
  int sp = 0, nneed = 0;
#define MARK(v)               \
  do {                        \
    if (!need[v]) {           \
      need[v] = 1;            \
      stack[sp++] = (v);      \
      nneed++;                \
    }                         \
  } while (0)
  for (int i = 0; i < nfetches; i++)
    if (!is_fed(fed, nfeeds, fetches[i])) MARK(fetches[i].node);
  for (int i = 0; i < ntargets; i++) MARK(targets[i]);
  while (sp) {
    const sm_node *v = &g->nodes[stack[--sp]];
    for (int i = 0; i < v->ninputs; i++)
      if (!is_fed(fed, nfeeds, v->inputs[i])) MARK(v->inputs[i].node);
    for (int i = 0; i < v->ncontrol; i++) MARK(v->control[i]);
  }
#undef MARK
  /* Kahn's algorithm over the needed nodes, in node order among the ready ones. */
  size_t nadj = 0;
  for (int v = 0; v < nn; v++) {
    if (!need[v]) continue;
    const sm_node *x = &g->nodes[v];
    for (int i = 0; i < x->ninputs; i++)
      if (!is_fed(fed, nfeeds, x->inputs[i])) {
        indeg[v]++;
        ostart[x->inputs[i].node + 1]++;
        nadj++;
      }
    for (int i = 0; i < x->ncontrol; i++) {
      indeg[v]++;
      ostart[x->control[i] + 1]++;
      nadj++;
    }
  }
  for (int v = 0; v < nn; v++) ostart[v + 1] += ostart[v];
  adj = malloc((nadj + 1) * sizeof *adj);
  if (!adj) goto nomem;
  /* fill: stack[] reused as per-node cursor */
  for (int v = 0; v < nn; v++) stack[v] = ostart[v];
  for (int v = 0; v < nn; v++) {
    if (!need[v]) continue;
    const sm_node *x = &g->nodes[v];
    for (int i = 0; i < x->ninputs; i++)
      if (!is_fed(fed, nfeeds, x->inputs[i])) adj[stack[x->inputs[i].node]++] = v;
    for (int i = 0; i < x->ncontrol; i++) adj[stack[x->control[i]]++] = v;
  }
  int head = 0, tail = 0;
  for (int v = 0; v < nn; v++)
    if (need[v] && !indeg[v]) res[tail++] = v;
  while (head < tail) {
    int u = res[head++];
    for (int j = ostart[u]; j < ostart[u + 1]; j++)
      if (--indeg[adj[j]] == 0) res[tail++] = adj[j];
  }
  if (tail < nneed) {
    /* Walk back along unfinished inputs until a node repeats: that node is on a cycle. */
    int v = -1;
    for (int i = 0; i < nn && v < 0; i++)
      if (need[i] && indeg[i] > 0) v = i;
    for (int steps = 0; steps < nneed; steps++) {
      const sm_node *x = &g->nodes[v];
      int next = -1;
      for (int i = 0; i < x->ninputs && next < 0; i++)
        if (!is_fed(fed, nfeeds, x->inputs[i]) && indeg[x->inputs[i].node] > 0) next = x->inputs[i].node;
      for (int i = 0; i < x->ncontrol && next < 0; i++)
        if (indeg[x->control[i]] > 0) next = x->control[i];
      if (next < 0) break;
      v = next;
    }
    const char *why = g->nodes[v].cf_error; /* a TF1 frame that is not a loop: say why */
    for (int i = 0; i < nn && !why; i++)
      if (need[i]) why = g->nodes[i].cf_error;
    s = why ? sm_status_new(SM_UNIMPLEMENTED, "the graph has a cycle through node '%s' (%s): %s",
                                             g->nodes[v].name, g->nodes[v].op, why)
                             : sm_status_new(SM_INVALID_ARGUMENT, "the graph has a cycle through node '%s' (%s)",
                                             g->nodes[v].name, g->nodes[v].op);
    free(res);
    res = NULL;
  } else {
    *order = res;
    *n = tail;
  }
  free(fed);
  free(need);
  free(stack);
  free(indeg);
  free(ostart);
  free(adj);
  return s;
nomem:
  free(fed);
  free(need);
  free(stack);
  free(indeg);
  free(ostart);
  free(res);
  free(adj);
  return oom();
}
