/* graph.c - sm_graph: a GraphDef built node by node, checked against the built-in OpDefs, with
 * TensorFlow's unique naming, dtype inference from inputs and a little shape inference. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builder_internal.h"
#include "graph/op_defs.h"
#include "base/file.h"
#include "savedmodel/pbtxt.h"

/* ---- a string -> long map (open addressing), for names in use and node lookup ---- */
typedef struct smap {
  char **keys;
  long *vals;
  size_t cap, n;
} smap;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static long *smap_find(const smap *m, const char *k) {
  if (!m->cap) return NULL;
  for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (!strcmp(m->keys[i], k)) return &m->vals[i];
  }
}

static int smap_put(smap *m, const char *k, long v) {
  long *p = smap_find(m, k);
  if (p) {
    *p = v;
    return 1;
  }
  if ((m->n + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    char **nk = calloc(nc, sizeof *nk);
    long *nv = calloc(nc, sizeof *nv);
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
  char *kc = sm__b_strdup(k);
  if (!kc) return 0;
  size_t j = hash_str(k) & (m->cap - 1);
  while (m->keys[j]) j = (j + 1) & (m->cap - 1);
  m->keys[j] = kc;
  m->vals[j] = v;
  m->n++;
  return 1;
}

static void smap_free(smap *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->vals);
}

/* ---- the built-in OpDef table: the graph layer's (src/graph/op_defs.h), parsed once there ---- */
const Tensorflow__OpDef *sm_op_def(const char *op_type) { return sm__builtin_op_def(op_type); }

/* ---- the graph ---- */
typedef struct node_info {
  const Tensorflow__OpDef *def;
  size_t n_out;
  int *dtype;      /* n_out */
  int *rank;       /* n_out; -1 unknown */
  int64_t **dims;  /* n_out */
} node_info;

typedef struct variable {
  char *name, *assign, *initial, *read;
  sm_tensor *value;
} variable;

struct sm_graph {
  Tensorflow__GraphDef *gd;
  node_info *info;
  size_t cap;
  smap used;  /* lower-cased names in use -> next suffix, as ops.Graph.unique_name */
  smap nodes; /* node name -> index */
  char **scopes;
  size_t nscopes;
  variable *vars;
  size_t nvars;
  sm_graph_saver saver;
  struct asset {
    char *node, *filename, *source;
  } *assets;
  size_t nassets;
  char *main_op;
  char **strs; /* graph-owned strings handed out (tensor names of multi-output helpers) */
  size_t nstrs;
};

struct sm_op {
  sm_graph *g;
  Tensorflow__NodeDef *nd;
  sm_status *err;
  const Tensorflow__OpDef *def;
  int exact; /* the name is final: do not scope or uniquify it */
};

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

sm_status *sm_graph_new(sm_graph **out) {
  *out = NULL;
  sm_graph *g = calloc(1, sizeof *g);
  if (!g) return oom();
  g->gd = malloc(sizeof *g->gd);
  if (!g->gd) {
    free(g);
    return oom();
  }
  tensorflow__graph_def__init(g->gd);
  *out = g;
  return NULL;
}

static void info_free(node_info *in) {
  for (size_t i = 0; i < in->n_out; i++) free(in->dims[i]);
  free(in->dtype);
  free(in->rank);
  free(in->dims);
}

void sm_graph_free(sm_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->gd->n_node; i++) info_free(&g->info[i]);
  protobuf_c_message_free_unpacked(&g->gd->base, NULL);
  free(g->info);
  smap_free(&g->used);
  smap_free(&g->nodes);
  for (size_t i = 0; i < g->nscopes; i++) free(g->scopes[i]);
  free(g->scopes);
  for (size_t i = 0; i < g->nvars; i++) {
    free(g->vars[i].name);
    free(g->vars[i].assign);
    free(g->vars[i].initial);
    free(g->vars[i].read);
    sm_tensor_free(g->vars[i].value);
  }
  free(g->vars);
  for (size_t i = 0; i < g->nassets; i++) {
    free(g->assets[i].node);
    free(g->assets[i].filename);
    free(g->assets[i].source);
  }
  free(g->assets);
  free(g->main_op);
  for (size_t i = 0; i < g->nstrs; i++) free(g->strs[i]);
  free(g->strs);
  free(g->saver.filename_tensor);
  free(g->saver.save_tensor);
  free(g->saver.restore_op);
  free(g);
}

const Tensorflow__GraphDef *sm_graph_def(const sm_graph *g) { return g->gd; }
sm_graph_saver *sm__graph_saver_state(sm_graph *g) { return &g->saver; }
int sm__graph_has_node(const sm_graph *g, const char *name) { return smap_find(&g->nodes, name) != NULL; }

/* ops.Graph.unique_name: "x", then "x_1", "x_2", ...; names compare case-insensitively. */
static char *unique_name(sm_graph *g, const char *base) {
  const char *scope = g->nscopes ? g->scopes[g->nscopes - 1] : NULL;
  size_t n = strlen(base) + (scope ? strlen(scope) + 1 : 0) + 24;
  char *full = malloc(n), *low = malloc(n);
  if (!full || !low) goto fail;
  if (scope)
    snprintf(full, n, "%s/%s", scope, base);
  else
    snprintf(full, n, "%s", base);
  for (size_t i = 0;; i++) {
    low[i] = (char)tolower((unsigned char)full[i]);
    if (!full[i]) break;
  }
  long *cnt = smap_find(&g->used, low);
  if (cnt) {
    long i = *cnt;
    size_t fl = strlen(full);
    char *cand = malloc(fl + 24), *candlow = malloc(fl + 24);
    if (!cand || !candlow) {
      free(cand);
      free(candlow);
      goto fail;
    }
    for (;; i++) {
      snprintf(cand, fl + 24, "%s_%ld", full, i);
      snprintf(candlow, fl + 24, "%s_%ld", low, i);
      if (!smap_find(&g->used, candlow)) break;
    }
    if (!smap_put(&g->used, low, i + 1) || !smap_put(&g->used, candlow, 1)) {
      free(cand);
      free(candlow);
      goto fail;
    }
    free(full);
    free(low);
    free(candlow);
    return cand;
  }
  if (!smap_put(&g->used, low, 1)) goto fail;
  free(low);
  return full;
fail:
  free(full);
  free(low);
  return NULL;
}

/* Records an exact name as in use; returns a malloc'ed copy. */
static char *mark_used(sm_graph *g, const char *full) {
  char *low = sm__b_strdup(full), *c = sm__b_strdup(full);
  if (!low || !c) goto fail;
  for (char *p = low; *p; p++) *p = (char)tolower((unsigned char)*p);
  if (!smap_find(&g->used, low) && !smap_put(&g->used, low, 1)) goto fail;
  free(low);
  return c;
fail:
  free(low);
  free(c);
  return NULL;
}

sm_status *sm_graph_push_scope(sm_graph *g, const char *scope, const char **used) {
  if (!scope || !*scope || strchr(scope, ':') || strchr(scope, '^'))
    return sm_status_new(SM_INVALID_ARGUMENT, "invalid name scope \"%s\"", scope ? scope : "(null)");
  char *u = unique_name(g, scope);
  if (!u || !sm__b_push(&g->scopes, &g->nscopes, u)) {
    free(u);
    return oom();
  }
  if (used) *used = u;
  return NULL;
}

void sm_graph_pop_scope(sm_graph *g) {
  if (g->nscopes) free(g->scopes[--g->nscopes]);
}

/* ---- node construction ---- */
static void op_fail(sm_op *op, sm_status *s) {
  if (op->err)
    sm_status_free(s);
  else
    op->err = s;
}

sm_op *sm_op_begin(sm_graph *g, const char *op_type, const char *name) {
  sm_op *op = calloc(1, sizeof *op);
  if (!op) return NULL;
  op->g = g;
  op->nd = malloc(sizeof *op->nd);
  if (!op->nd) {
    op->err = oom();
    return op;
  }
  tensorflow__node_def__init(op->nd);
  op->def = sm_op_def(op_type);
  if (!op->def) {
    op->err = sm_status_new(SM_INVALID_ARGUMENT, "op type \"%s\" is not in this library's OpDef table",
                            op_type ? op_type : "(null)");
    return op;
  }
  if (name && (!*name || strchr(name, ':') || name[0] == '^' || name[0] == '/' || name[strlen(name) - 1] == '/')) {
    op->err = sm_status_new(SM_INVALID_ARGUMENT, "invalid node name \"%s\"", name);
    return op;
  }
  op->nd->op = sm__b_strdup(op_type);
  op->nd->name = sm__b_strdup(name ? name : op_type); /* made unique at finish */
  if (!op->nd->op || !op->nd->name) op_fail(op, oom());
  return op;
}

void sm_op_input(sm_op *op, const char *tensor) {
  if (!op || op->err) return;
  if (!tensor || !*tensor) {
    op_fail(op, sm_status_new(SM_INVALID_ARGUMENT, "empty input name"));
    return;
  }
  char *c = sm__b_strdup(tensor);
  if (!c || !sm__b_push(&op->nd->input, &op->nd->n_input, c)) {
    free(c);
    op_fail(op, oom());
  }
}

void sm_op_device(sm_op *op, const char *device) {
  if (!op || op->err) return;
  char *d = sm__b_strdup(device);
  if (!d) {
    op_fail(op, oom());
    return;
  }
  if (op->nd->device != protobuf_c_empty_string) free(op->nd->device);
  op->nd->device = d;
}

static Tensorflow__NodeDef__AttrEntry *find_attr(Tensorflow__NodeDef *nd, const char *name) {
  for (size_t i = 0; i < nd->n_attr; i++)
    if (!strcmp(nd->attr[i]->key, name)) return nd->attr[i];
  return NULL;
}

/* Takes ownership of v. */
static void set_attr(sm_op *op, const char *name, Tensorflow__AttrValue *v) {
  if (!op || op->err || !v) {
    if (op && !v) op_fail(op, oom());
    if (v) protobuf_c_message_free_unpacked(&v->base, NULL);
    return;
  }
  Tensorflow__NodeDef__AttrEntry *e = find_attr(op->nd, name);
  if (e) {
    protobuf_c_message_free_unpacked(&e->value->base, NULL);
    e->value = v;
    return;
  }
  e = malloc(sizeof *e);
  if (e) {
    tensorflow__node_def__attr_entry__init(e);
    e->key = sm__b_strdup(name);
    e->value = v;
  }
  if (!e || !e->key || !sm__b_push(&op->nd->attr, &op->nd->n_attr, e)) {
    if (e) protobuf_c_message_free_unpacked(&e->base, NULL);
    else protobuf_c_message_free_unpacked(&v->base, NULL);
    op_fail(op, oom());
  }
}

static Tensorflow__AttrValue *attr_new(Tensorflow__AttrValue__ValueCase c) {
  Tensorflow__AttrValue *v = malloc(sizeof *v);
  if (v) {
    tensorflow__attr_value__init(v);
    v->value_case = c;
  }
  return v;
}

static Tensorflow__AttrValue *attr_list(void) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  if (!v) return NULL;
  v->list = malloc(sizeof *v->list);
  if (!v->list) {
    free(v);
    return NULL;
  }
  tensorflow__attr_value__list_value__init(v->list);
  return v;
}

void sm_op_attr_int(sm_op *op, const char *name, int64_t x) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_I);
  if (v) v->i = x;
  set_attr(op, name, v);
}
void sm_op_attr_float(sm_op *op, const char *name, float x) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_F);
  if (v) v->f = x;
  set_attr(op, name, v);
}
void sm_op_attr_bool(sm_op *op, const char *name, int x) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_B);
  if (v) v->b = x != 0;
  set_attr(op, name, v);
}
void sm_op_attr_type(sm_op *op, const char *name, int dtype) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  if (v) v->type = (Tensorflow__DataType)dtype;
  set_attr(op, name, v);
}
void sm_op_attr_shape(sm_op *op, const char *name, int rank, const int64_t *dims) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_SHAPE);
  if (v && !(v->shape = sm__b_shape(rank, dims))) {
    free(v);
    v = NULL;
  }
  set_attr(op, name, v);
}
void sm_op_attr_string(sm_op *op, const char *name, const void *bytes, size_t len) {
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_S);
  if (v) {
    v->s.data = malloc(len ? len : 1);
    if (!v->s.data) {
      free(v);
      v = NULL;
    } else {
      if (len) memcpy(v->s.data, bytes, len);
      v->s.len = len;
    }
  }
  set_attr(op, name, v);
}
void sm_op_attr_tensor(sm_op *op, const char *name, const sm_tensor *t) {
  if (!op || op->err) return;
  Tensorflow__TensorProto *tp;
  sm_status *s = sm__b_tensor_proto(t, &tp);
  if (s) {
    op_fail(op, s);
    return;
  }
  Tensorflow__AttrValue *v = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
  if (v)
    v->tensor = tp;
  else
    protobuf_c_message_free_unpacked(&tp->base, NULL);
  set_attr(op, name, v);
}
void sm_op_attr_int_list(sm_op *op, const char *name, const int64_t *x, size_t n) {
  Tensorflow__AttrValue *v = attr_list();
  if (v && n) {
    if (!(v->list->i = malloc(n * sizeof *x))) {
      protobuf_c_message_free_unpacked(&v->base, NULL);
      v = NULL;
    } else {
      memcpy(v->list->i, x, n * sizeof *x);
      v->list->n_i = n;
    }
  }
  set_attr(op, name, v);
}
void sm_op_attr_float_list(sm_op *op, const char *name, const float *x, size_t n) {
  Tensorflow__AttrValue *v = attr_list();
  if (v && n) {
    if (!(v->list->f = malloc(n * sizeof *x))) {
      protobuf_c_message_free_unpacked(&v->base, NULL);
      v = NULL;
    } else {
      memcpy(v->list->f, x, n * sizeof *x);
      v->list->n_f = n;
    }
  }
  set_attr(op, name, v);
}
void sm_op_attr_type_list(sm_op *op, const char *name, const int *dt, size_t n) {
  Tensorflow__AttrValue *v = attr_list();
  if (v && n) {
    if (!(v->list->type = malloc(n * sizeof *v->list->type))) {
      protobuf_c_message_free_unpacked(&v->base, NULL);
      v = NULL;
    } else {
      for (size_t i = 0; i < n; i++) v->list->type[i] = (Tensorflow__DataType)dt[i];
      v->list->n_type = n;
    }
  }
  set_attr(op, name, v);
}
void sm_op_attr_string_list(sm_op *op, const char *name, const char *const *x, size_t n) {
  Tensorflow__AttrValue *v = attr_list();
  if (v && n) {
    if (!(v->list->s = calloc(n, sizeof *v->list->s))) {
      protobuf_c_message_free_unpacked(&v->base, NULL);
      v = NULL;
    } else {
      for (size_t i = 0; i < n && v; i++) {
        size_t len = strlen(x[i]);
        v->list->s[i].data = malloc(len + 1);
        if (!v->list->s[i].data) {
          protobuf_c_message_free_unpacked(&v->base, NULL);
          v = NULL;
          break;
        }
        memcpy(v->list->s[i].data, x[i], len);
        v->list->s[i].len = len;
        v->list->n_s++;
      }
    }
  }
  set_attr(op, name, v);
}

void sm_op_attr_shape_list(sm_op *op, const char *name, const int *ranks, const int64_t *const *dims, size_t n) {
  Tensorflow__AttrValue *v = attr_list();
  if (v && n) {
    if (!(v->list->shape = calloc(n, sizeof *v->list->shape))) {
      protobuf_c_message_free_unpacked(&v->base, NULL);
      v = NULL;
    }
    for (size_t i = 0; i < n && v; i++) {
      if (!(v->list->shape[i] = sm__b_shape(ranks[i], dims ? dims[i] : NULL))) {
        protobuf_c_message_free_unpacked(&v->base, NULL);
        v = NULL;
        break;
      }
      v->list->n_shape++;
    }
  }
  set_attr(op, name, v);
}

/* ---- checking against the OpDef ---- */
static const Tensorflow__OpDef__AttrDef *def_attr(const Tensorflow__OpDef *d, const char *name) {
  for (size_t i = 0; i < d->n_attr; i++)
    if (!strcmp(d->attr[i]->name, name)) return d->attr[i];
  return NULL;
}

/* Does the value's kind match the OpDef attr type ("int", "list(type)", ...)? */
static int kind_matches(const char *type, const Tensorflow__AttrValue *v) {
  static const struct {
    const char *t;
    Tensorflow__AttrValue__ValueCase c;
  } k[] = {{"string", TENSORFLOW__ATTR_VALUE__VALUE_S},     {"int", TENSORFLOW__ATTR_VALUE__VALUE_I},
           {"float", TENSORFLOW__ATTR_VALUE__VALUE_F},      {"bool", TENSORFLOW__ATTR_VALUE__VALUE_B},
           {"type", TENSORFLOW__ATTR_VALUE__VALUE_TYPE},    {"shape", TENSORFLOW__ATTR_VALUE__VALUE_SHAPE},
           {"tensor", TENSORFLOW__ATTR_VALUE__VALUE_TENSOR}, {"func", TENSORFLOW__ATTR_VALUE__VALUE_FUNC}};
  if (!strncmp(type, "list(", 5)) {
    if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST) return 0;
    const Tensorflow__AttrValue__ListValue *l = v->list;
    size_t n[8] = {l->n_s, l->n_i, l->n_f, l->n_b, l->n_type, l->n_shape, l->n_tensor, l->n_func};
    for (int i = 0; i < 8; i++)
      if (n[i] && strncmp(type + 5, k[i].t, strlen(k[i].t))) return 0;
    return 1;
  }
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    if (!strcmp(type, k[i].t)) return v->value_case == k[i].c;
  return 0;
}

static int type_allowed(const Tensorflow__OpDef__AttrDef *a, int dt) {
  if (!a->allowed_values || a->allowed_values->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST) return 1;
  const Tensorflow__AttrValue__ListValue *l = a->allowed_values->list;
  for (size_t i = 0; i < l->n_type; i++)
    if ((int)l->type[i] == dt) return 1;
  return 0;
}

static const char *dtname(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "(unknown dtype)";
}

/* Resolves "node:i" against the graph. */
static sm_status *lookup_tensor(const sm_graph *g, const char *t, long *node, long *idx) {
  const char *colon = strrchr(t, ':');
  size_t nl = colon ? (size_t)(colon - t) : strlen(t);
  char *nm = malloc(nl + 1);
  if (!nm) return oom();
  memcpy(nm, t, nl);
  nm[nl] = 0;
  long i = 0;
  if (colon) {
    char *end;
    i = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || i < 0) {
      free(nm);
      return sm_status_new(SM_INVALID_ARGUMENT, "bad tensor name \"%s\"", t);
    }
  }
  long *p = smap_find(&g->nodes, nm);
  free(nm);
  if (!p) return sm_status_new(SM_NOT_FOUND, "tensor \"%s\": no such node in the graph", t);
  if ((size_t)i >= g->info[*p].n_out)
    return sm_status_new(SM_NOT_FOUND, "tensor \"%s\": node has %zu output(s)", t, g->info[*p].n_out);
  *node = *p;
  *idx = i;
  return NULL;
}

sm_status *sm_graph_tensor(const sm_graph *g, const char *tensor, int *dtype, int *rank, const int64_t **dims) {
  long n, i;
  sm_status *s = lookup_tensor(g, tensor, &n, &i);
  if (s) return s;
  if (dtype) *dtype = g->info[n].dtype[i];
  if (rank) *rank = g->info[n].rank[i];
  if (dims) *dims = g->info[n].dims[i];
  return NULL;
}

static sm_status *need_attr_type(sm_op *op, const char *attr, int dt, const char *arg) {
  Tensorflow__NodeDef__AttrEntry *e = find_attr(op->nd, attr);
  if (e) {
    if (e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE)
      return sm_status_new(SM_INVALID_ARGUMENT, "attr \"%s\" must be a type", attr);
    if ((int)e->value->type != dt)
      return sm_status_new(SM_INVALID_ARGUMENT, "input \"%s\" is %s but attr %s = %s", arg, dtname(dt), attr,
                           dtname(e->value->type));
    return NULL;
  }
  sm_op_attr_type(op, attr, dt);
  return op->err;
}

/* Matches inputs to the OpDef's input args, inferring type/number attrs. */
static sm_status *check_inputs(sm_op *op) {
  sm_graph *g = op->g;
  const Tensorflow__OpDef *d = op->def;
  size_t ndata = 0;
  for (size_t i = 0; i < op->nd->n_input; i++) {
    const char *in = op->nd->input[i];
    if (in[0] == '^') {
      if (!smap_find(&g->nodes, in + 1))
        return sm_status_new(SM_NOT_FOUND, "control input \"%s\": no such node in the graph", in);
      continue;
    }
    if (i != ndata) return sm_status_new(SM_INVALID_ARGUMENT, "data input \"%s\" after a control input", in);
    ndata++;
  }
  int *dts = calloc(ndata ? ndata : 1, sizeof *dts);
  if (!dts) return oom();
  sm_status *s = NULL;
  for (size_t i = 0; i < ndata && !s; i++) {
    long n, k;
    s = lookup_tensor(g, op->nd->input[i], &n, &k);
    if (!s) dts[i] = sm_dtype_base(g->info[n].dtype[k]);
  }
  size_t nsingle = 0, nlist = 0;
  for (size_t a = 0; a < d->n_input_arg; a++) {
    const Tensorflow__OpDef__ArgDef *ad = d->input_arg[a];
    if (*ad->number_attr || *ad->type_list_attr)
      nlist++;
    else
      nsingle++;
  }
  if (!s && (ndata < nsingle || (!nlist && ndata != nsingle) || nlist > 1))
    s = sm_status_new(SM_INVALID_ARGUMENT, "takes %zu input(s)%s, got %zu", nsingle, nlist ? " and a list" : "", ndata);
  size_t pos = 0;
  for (size_t a = 0; a < d->n_input_arg && !s; a++) {
    const Tensorflow__OpDef__ArgDef *ad = d->input_arg[a];
    size_t count = 1;
    if (*ad->number_attr || *ad->type_list_attr) count = ndata - nsingle;
    if (*ad->number_attr) {
      Tensorflow__NodeDef__AttrEntry *e = find_attr(op->nd, ad->number_attr);
      if (e && (e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_I || e->value->i != (int64_t)count))
        s = sm_status_new(SM_INVALID_ARGUMENT, "attr %s does not match the %zu input(s) of \"%s\"", ad->number_attr,
                          count, ad->name);
      else if (!e) {
        sm_op_attr_int(op, ad->number_attr, (int64_t)count);
        s = op->err;
        op->err = NULL;
      }
    }
    if (*ad->type_list_attr && !s) {
      Tensorflow__NodeDef__AttrEntry *e = find_attr(op->nd, ad->type_list_attr);
      if (e) {
        if (e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || e->value->list->n_type != count)
          s = sm_status_new(SM_INVALID_ARGUMENT, "attr %s does not match the inputs of \"%s\"", ad->type_list_attr,
                            ad->name);
        for (size_t j = 0; j < count && !s; j++)
          if ((int)e->value->list->type[j] != dts[pos + j])
            s = sm_status_new(SM_INVALID_ARGUMENT, "input %zu of \"%s\" is %s, attr %s says %s", j, ad->name,
                              dtname(dts[pos + j]), ad->type_list_attr, dtname(e->value->list->type[j]));
      } else {
        sm_op_attr_type_list(op, ad->type_list_attr, dts + pos, count);
        s = op->err;
        op->err = NULL;
      }
    } else {
      for (size_t j = 0; j < count && !s; j++) {
        int dt = dts[pos + j];
        if (*ad->type_attr) {
          s = need_attr_type(op, ad->type_attr, dt, ad->name);
          op->err = NULL;
        } else if ((int)ad->type != dt)
          s = sm_status_new(SM_INVALID_ARGUMENT, "input \"%s\" must be %s, got %s (%s)", ad->name, dtname(ad->type),
                            dtname(dt), op->nd->input[pos + j]);
      }
    }
    pos += count;
  }
  free(dts);
  return s;
}

static sm_status *check_attrs(sm_op *op) {
  const Tensorflow__OpDef *d = op->def;
  for (size_t i = 0; i < op->nd->n_attr; i++) {
    const char *k = op->nd->attr[i]->key;
    if (k[0] == '_') continue; /* internal attrs (_class, _output_shapes) are free-form */
    const Tensorflow__OpDef__AttrDef *a = def_attr(d, k);
    if (!a) return sm_status_new(SM_INVALID_ARGUMENT, "unknown attr \"%s\" (op %s has no such attr)", k, d->name);
    const Tensorflow__AttrValue *v = op->nd->attr[i]->value;
    if (!kind_matches(a->type, v))
      return sm_status_new(SM_INVALID_ARGUMENT, "attr \"%s\" must be of type %s", k, a->type);
    if (!strcmp(a->type, "type") && !type_allowed(a, v->type))
      return sm_status_new(SM_INVALID_ARGUMENT, "attr %s = %s is not allowed for op %s", k, dtname(v->type), d->name);
    if (!strcmp(a->type, "list(type)"))
      for (size_t j = 0; j < v->list->n_type; j++)
        if (!type_allowed(a, v->list->type[j]))
          return sm_status_new(SM_INVALID_ARGUMENT, "attr %s: %s is not allowed for op %s", k,
                               dtname(v->list->type[j]), d->name);
    if (a->has_minimum) {
      int64_t have = !strcmp(a->type, "int") ? v->i
                     : !strncmp(a->type, "list(", 5)
                         ? (int64_t)(v->list->n_s + v->list->n_i + v->list->n_f + v->list->n_b + v->list->n_type +
                                     v->list->n_shape + v->list->n_tensor + v->list->n_func)
                         : a->minimum;
      if (have < a->minimum)
        return sm_status_new(SM_INVALID_ARGUMENT, "attr %s = %lld is below its minimum %lld", k, (long long)have,
                             (long long)a->minimum);
    }
  }
  for (size_t i = 0; i < d->n_attr; i++) {
    const Tensorflow__OpDef__AttrDef *a = d->attr[i];
    if (find_attr(op->nd, a->name)) continue;
    if (!a->default_value)
      return sm_status_new(SM_INVALID_ARGUMENT, "missing attr \"%s\" (op %s requires it)", a->name, d->name);
    ProtobufCMessage *c;
    sm_status *s = sm__b_clone(&a->default_value->base, &c);
    if (s) return s;
    set_attr(op, a->name, (Tensorflow__AttrValue *)c);
    if (op->err) {
      s = op->err;
      op->err = NULL;
      return s;
    }
  }
  return NULL;
}

/* ---- outputs: dtypes from the OpDef, shapes where easy ---- */
static int attr_type_of(Tensorflow__NodeDef *nd, const char *name) {
  Tensorflow__NodeDef__AttrEntry *e = find_attr(nd, name);
  return e && e->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE ? (int)e->value->type : 0;
}

static int shape_from_proto(const Tensorflow__TensorShapeProto *sp, int *rank, int64_t **dims) {
  *dims = NULL;
  if (!sp || sp->unknown_rank) {
    *rank = -1;
    return 1;
  }
  *rank = (int)sp->n_dim;
  if (!sp->n_dim) return 1;
  if (!(*dims = malloc(sp->n_dim * sizeof **dims))) return 0;
  for (size_t i = 0; i < sp->n_dim; i++) (*dims)[i] = sp->dim[i]->size;
  return 1;
}

static int set_shape(node_info *in, size_t k, int rank, const int64_t *dims) {
  free(in->dims[k]);
  in->dims[k] = NULL;
  in->rank[k] = rank;
  if (rank > 0) {
    if (!(in->dims[k] = malloc((size_t)rank * sizeof *dims))) return 0;
    memcpy(in->dims[k], dims, (size_t)rank * sizeof *dims);
  }
  return 1;
}

/* ParseExampleV2's dense value i: [batch] + dense_shapes[i], batch from the serialized input. */
static int infer_parse_example(sm_graph *g, Tensorflow__NodeDef *nd, node_info *in) {
  Tensorflow__NodeDef__AttrEntry *ns = find_attr(nd, "num_sparse"), *sh = find_attr(nd, "dense_shapes");
  if (!ns || !sh || !sh->value->list || ns->value->i != 0 || !nd->n_input) return 1; /* sparse: left unknown */
  long src = -1, k = 0;
  sm_status_free(lookup_tensor(g, nd->input[0], &src, &k));
  int64_t batch = src >= 0 && g->info[src].rank[k] == 1 ? g->info[src].dims[k][0] : -1;
  for (size_t i = 0; i < sh->value->list->n_shape && i < in->n_out; i++) {
    const Tensorflow__TensorShapeProto *sp = sh->value->list->shape[i];
    if (sp->unknown_rank || sp->n_dim > 64) continue;
    int64_t d[65];
    d[0] = batch;
    for (size_t j = 0; j < sp->n_dim; j++) d[j + 1] = sp->dim[j]->size;
    if (!set_shape(in, i, (int)sp->n_dim + 1, d)) return 0;
  }
  return 1;
}

static int infer_shape(sm_graph *g, Tensorflow__NodeDef *nd, node_info *in) {
  const char *op = nd->op;
  if (!in->n_out) return 1;
  Tensorflow__NodeDef__AttrEntry *e;
  if (!strcmp(op, "Placeholder") || !strcmp(op, "PlaceholderWithDefault") || !strcmp(op, "VarHandleOp")) {
    e = find_attr(nd, "shape");
    free(in->dims[0]);
    return shape_from_proto(e ? e->value->shape : NULL, &in->rank[0], &in->dims[0]);
  }
  if (!strcmp(op, "Const")) {
    e = find_attr(nd, "value");
    free(in->dims[0]);
    return shape_from_proto(e ? e->value->tensor->tensor_shape : NULL, &in->rank[0], &in->dims[0]);
  }
  if (!strcmp(op, "ParseExampleV2")) return infer_parse_example(g, nd, in);
  long src[2] = {-1, -1}, k[2] = {0, 0};
  for (size_t i = 0; i < nd->n_input && i < 2 && nd->input[i][0] != '^'; i++) {
    sm_status *s = lookup_tensor(g, nd->input[i], &src[i], &k[i]);
    sm_status_free(s);
  }
  static const char *unary[] = {"Identity", "Square", "Neg", "Relu", "Sigmoid", "Tanh", "Softmax", "Cast",
                                "BiasAdd", "ReadVariableOp"};
  for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
    if (!strcmp(op, unary[i]) && src[0] >= 0)
      return set_shape(in, 0, g->info[src[0]].rank[k[0]], g->info[src[0]].dims[k[0]]);
  if (src[0] < 0 || src[1] < 0) return 1;
  int ra = g->info[src[0]].rank[k[0]], rb = g->info[src[1]].rank[k[1]];
  const int64_t *da = g->info[src[0]].dims[k[0]], *db = g->info[src[1]].dims[k[1]];
  if (!strcmp(op, "Mul") || !strcmp(op, "AddV2") || !strcmp(op, "Sub") || !strcmp(op, "RealDiv")) {
    if (ra == 0) return set_shape(in, 0, rb, db);
    if (rb == 0) return set_shape(in, 0, ra, da);
    if (ra < 0 || rb < 0 || ra > 64 || rb > 64) return 1;
    /* numpy broadcasting; a dim unknown on one side and not 1 on the other stays unknown */
    int r = ra > rb ? ra : rb;
    int64_t d[64];
    for (int i = 0; i < r; i++) {
      int64_t x = i < r - ra ? 1 : da[i - (r - ra)], y = i < r - rb ? 1 : db[i - (r - rb)];
      if (x == 1) d[i] = y;
      else if (y == 1) d[i] = x;
      else if (x == y) d[i] = x;
      else if (x < 0 || y < 0) d[i] = x < 0 ? y : x;
      else return 1; /* incompatible: the kernel will say so */
    }
    return set_shape(in, 0, r, d);
  }
  if (!strcmp(op, "LookupTableFindV2")) /* keys -> values of the same shape (scalar values) */
    return set_shape(in, 0, rb, db);
  if (!strcmp(op, "BroadcastTo") && !strcmp(g->gd->node[src[1]]->op, "Shape")) {
    /* broadcast to the shape of a tensor: that tensor's shape */
    long s2 = -1, k2 = 0;
    Tensorflow__NodeDef *shn = g->gd->node[src[1]];
    if (shn->n_input) sm_status_free(lookup_tensor(g, shn->input[0], &s2, &k2));
    if (s2 >= 0) return set_shape(in, 0, g->info[s2].rank[k2], g->info[s2].dims[k2]);
    return 1;
  }
  if (!strcmp(op, "ArgMax") && ra > 0 && !strcmp(g->gd->node[src[1]]->op, "Const")) {
    /* the reduced axis, a scalar Const */
    Tensorflow__NodeDef__AttrEntry *v = find_attr(g->gd->node[src[1]], "value");
    const Tensorflow__TensorProto *tp = v ? v->value->tensor : NULL;
    long ax;
    if (!tp || tp->tensor_shape == NULL || tp->tensor_shape->n_dim) return 1;
    if (tp->n_int_val) ax = tp->int_val[0];
    else if (tp->n_int64_val) ax = (long)tp->int64_val[0];
    else if (tp->tensor_content.len == 4) {
      int32_t a32;
      memcpy(&a32, tp->tensor_content.data, 4);
      ax = a32;
    } else if (tp->tensor_content.len == 8) {
      int64_t a64;
      memcpy(&a64, tp->tensor_content.data, 8);
      ax = (long)a64;
    } else {
      return 1;
    }
    if (ax < 0) ax += ra;
    if (ax < 0 || ax >= ra) return 1;
    int64_t d[64];
    int r = 0;
    for (int i = 0; i < ra && i < 64; i++)
      if (i != ax) d[r++] = da[i];
    return set_shape(in, 0, r, d);
  }
  if (!strcmp(op, "MatMul") && ra == 2 && rb == 2) {
    Tensorflow__NodeDef__AttrEntry *ta = find_attr(nd, "transpose_a"), *tb = find_attr(nd, "transpose_b");
    int64_t d[2] = {da[ta && ta->value->b ? 1 : 0], db[tb && tb->value->b ? 0 : 1]};
    return set_shape(in, 0, 2, d);
  }
  return 1;
}

static sm_status *make_outputs(sm_op *op, node_info *in) {
  const Tensorflow__OpDef *d = op->def;
  for (size_t a = 0; a < d->n_output_arg; a++) {
    const Tensorflow__OpDef__ArgDef *ad = d->output_arg[a];
    size_t count = 1;
    int *types = NULL, one = 0;
    if (*ad->type_list_attr) {
      Tensorflow__NodeDef__AttrEntry *e = find_attr(op->nd, ad->type_list_attr);
      count = e->value->list->n_type;
      types = (int *)e->value->list->type;
    } else {
      if (*ad->number_attr) count = (size_t)find_attr(op->nd, ad->number_attr)->value->i;
      one = *ad->type_attr ? attr_type_of(op->nd, ad->type_attr) : (int)ad->type;
    }
    for (size_t j = 0; j < count; j++) {
      size_t n = in->n_out;
      int *dt = realloc(in->dtype, (n + 1) * sizeof *dt);
      if (dt) in->dtype = dt;
      int *rk = realloc(in->rank, (n + 1) * sizeof *rk);
      if (rk) in->rank = rk;
      int64_t **dm = realloc(in->dims, (n + 1) * sizeof *dm);
      if (dm) in->dims = dm;
      if (!dt || !rk || !dm) return oom();
      in->dtype[n] = types ? types[j] : one;
      in->rank[n] = -1;
      in->dims[n] = NULL;
      in->n_out++;
    }
  }
  return NULL;
}

sm_status *sm_op_finish(sm_op *op, const char **name_out) {
  if (!op) return oom();
  sm_graph *g = op->g;
  sm_status *s = op->err;
  node_info in = {0};
  char *unique = NULL;
  if (!s) s = check_inputs(op);
  if (!s) s = check_attrs(op);
  if (!s) {
    in.def = op->def;
    s = make_outputs(op, &in);
  }
  if (!s && !(unique = op->exact ? mark_used(g, op->nd->name) : unique_name(g, op->nd->name))) s = oom();
  if (!s) {
    free(op->nd->name);
    op->nd->name = unique;
    if (g->gd->n_node == g->cap) {
      size_t nc = g->cap ? g->cap * 2 : 16;
      node_info *ni = realloc(g->info, nc * sizeof *ni);
      if (ni) g->info = ni;
      Tensorflow__NodeDef **nn = realloc(g->gd->node, nc * sizeof *nn);
      if (nn) g->gd->node = nn;
      if (!ni || !nn) s = oom();
      else g->cap = nc;
    }
  }
  if (!s && !infer_shape(g, op->nd, &in)) s = oom();
  if (!s && !smap_put(&g->nodes, op->nd->name, (long)g->gd->n_node)) s = oom();
  if (s) {
    info_free(&in);
    const char *nm = op->nd && op->nd->name ? op->nd->name : "?";
    const char *ty = op->nd && op->nd->op ? op->nd->op : "?";
    s = sm_status_prefix(s, "node \"%s\" (%s)", nm, ty);
    if (op->nd) protobuf_c_message_free_unpacked(&op->nd->base, NULL);
    free(op);
    return s;
  }
  g->info[g->gd->n_node] = in;
  g->gd->node[g->gd->n_node++] = op->nd;
  if (name_out) *name_out = op->nd->name;
  free(op);
  return NULL;
}

/* ---- helpers ---- */
sm_status *sm_graph_placeholder(sm_graph *g, const char *name, int dtype, int rank, const int64_t *dims,
                                const char **out) {
  sm_op *op = sm_op_begin(g, "Placeholder", name);
  sm_op_attr_type(op, "dtype", dtype);
  sm_op_attr_shape(op, "shape", rank, dims);
  return sm_op_finish(op, out);
}

sm_status *sm_graph_const(sm_graph *g, const char *name, const sm_tensor *value, const char **out) {
  sm_op *op = sm_op_begin(g, "Const", name);
  sm_op_attr_tensor(op, "value", value);
  sm_op_attr_type(op, "dtype", sm_tensor_dtype(value));
  return sm_op_finish(op, out);
}

sm_status *sm_graph_unary(sm_graph *g, const char *op_type, const char *name, const char *x, const char **out) {
  sm_op *op = sm_op_begin(g, op_type, name);
  sm_op_input(op, x);
  return sm_op_finish(op, out);
}

sm_status *sm_graph_binary(sm_graph *g, const char *op_type, const char *name, const char *x, const char *y,
                           const char **out) {
  sm_op *op = sm_op_begin(g, op_type, name);
  sm_op_input(op, x);
  sm_op_input(op, y);
  return sm_op_finish(op, out);
}

static sm_status *class_attr(sm_op *op, const char *var) {
  size_t n = strlen(var) + 6;
  char *loc = malloc(n);
  if (!loc) return oom();
  snprintf(loc, n, "loc:@%s", var);
  const char *l = loc;
  sm_op_attr_string_list(op, "_class", &l, 1);
  free(loc);
  return NULL;
}

/* Adds a node named exactly `full` (already scoped), as TF names a variable's handle after its
 * name scope. */
static sm_status *finish_exact(sm_op *op, const char *full, const char **name_out) {
  if (op && !op->err) {
    if (smap_find(&op->g->nodes, full)) {
      op_fail(op, sm_status_new(SM_ALREADY_EXISTS, "a node named \"%s\" exists", full));
    } else {
      char *c = sm__b_strdup(full);
      if (!c) {
        op_fail(op, oom());
      } else {
        free(op->nd->name);
        op->nd->name = c;
        op->exact = 1;
      }
    }
  }
  return sm_op_finish(op, name_out);
}

sm_status *sm_graph_variable(sm_graph *g, const char *name, const sm_tensor *value, const char **read_out) {
  if (!name || !*name || strchr(name, ':') || name[0] == '^')
    return sm_status_new(SM_INVALID_ARGUMENT, "invalid variable name \"%s\"", name ? name : "(null)");
  if (!value) return sm_status_new(SM_INVALID_ARGUMENT, "variable \"%s\" without a value", name);
  int dt = sm_tensor_dtype(value);
  variable v = {0};
  const char *scope = NULL, *handle = NULL, *init = NULL, *assign = NULL, *read = NULL;
  sm_status *s = sm_tensor_copy(value, &v.value);
  if (s) return sm_status_prefix(s, "variable \"%s\"", name);
  s = sm_graph_push_scope(g, name, &scope);
  if (s) {
    sm_tensor_free(v.value);
    return s;
  }
  sm_op *op = sm_op_begin(g, "Const", "Initializer/initial_value");
  Tensorflow__TensorProto *zeros = NULL;
  int64_t nel = sm_tensor_num_elements(value);
  if ((sm_tensor_nbytes(value) > SM_GRAPH_INLINE_INITIAL_BYTES || (dt == SM_STRING && nel > 64)))
    sm_status_free(sm__b_zeros_proto(dt, sm_tensor_rank(value), sm_tensor_dims(value), &zeros));
  if (zeros) {
    Tensorflow__AttrValue *av = attr_new(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
    if (av)
      av->tensor = zeros;
    else
      protobuf_c_message_free_unpacked(&zeros->base, NULL);
    set_attr(op, "value", av);
  } else {
    sm_op_attr_tensor(op, "value", value);
  }
  sm_op_attr_type(op, "dtype", dt);
  s = class_attr(op, scope);
  s = s ? s : sm_op_finish(op, &init);
  if (!s) {
    size_t n = strlen(scope) + 2;
    char *dbg = malloc(n);
    if (dbg) snprintf(dbg, n, "%s/", scope);
    op = sm_op_begin(g, "VarHandleOp", NULL);
    sm_op_attr_string(op, "shared_name", scope, strlen(scope));
    sm_op_attr_shape(op, "shape", sm_tensor_rank(value), sm_tensor_dims(value));
    sm_op_attr_type(op, "dtype", dt);
    if (dbg) sm_op_attr_string(op, "debug_name", dbg, strlen(dbg));
    free(dbg);
    s = class_attr(op, scope);
    s = s ? s : finish_exact(op, scope, &handle);
  }
  if (!s) {
    op = sm_op_begin(g, "VarIsInitializedOp", "IsInitialized/VarIsInitializedOp");
    sm_op_input(op, handle);
    s = sm_op_finish(op, NULL);
  }
  if (!s) {
    op = sm_op_begin(g, "AssignVariableOp", "Assign");
    sm_op_input(op, handle);
    sm_op_input(op, init);
    sm_op_attr_bool(op, "validate_shape", 0);
    sm_op_attr_type(op, "dtype", dt);
    sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
    s = sm_op_finish(op, &assign);
  }
  if (!s) {
    op = sm_op_begin(g, "ReadVariableOp", "Read/ReadVariableOp");
    sm_op_input(op, handle);
    sm_op_attr_type(op, "dtype", dt);
    s = sm_op_finish(op, &read);
  }
  sm_graph_pop_scope(g);
  if (!s) {
    v.name = sm__b_strdup(handle);
    v.assign = sm__b_strdup(assign);
    v.initial = sm__b_strdup(init);
    v.read = sm__b_strdup(read);
    variable *nv = realloc(g->vars, (g->nvars + 1) * sizeof *nv);
    if (nv) g->vars = nv;
    if (!v.name || !v.assign || !v.initial || !v.read || !nv) s = oom();
  }
  if (s) {
    free(v.name);
    free(v.assign);
    free(v.initial);
    free(v.read);
    sm_tensor_free(v.value);
    return sm_status_prefix(s, "variable \"%s\"", name);
  }
  g->vars[g->nvars++] = v;
  if (read_out) *read_out = read;
  return NULL;
}

size_t sm_graph_num_variables(const sm_graph *g) { return g->nvars; }
void sm_graph_variable_at(const sm_graph *g, size_t i, const char **name, const sm_tensor **value) {
  if (name) *name = g->vars[i].name;
  if (value) *value = g->vars[i].value;
}
long sm__graph_find_variable(const sm_graph *g, const char *name) {
  for (size_t i = 0; i < g->nvars; i++)
    if (!strcmp(g->vars[i].name, name)) return (long)i;
  return -1;
}
const char *sm__graph_variable_assign(const sm_graph *g, size_t i) { return g->vars[i].assign; }
const char *sm__graph_variable_initial(const sm_graph *g, size_t i) { return g->vars[i].initial; }

sm_status *sm_graph_asset(sm_graph *g, const char *name, const char *filename, const char *source_path,
                          const char **out) {
  if (!filename || !*filename || strchr(filename, '/') || !strcmp(filename, ".") || !strcmp(filename, ".."))
    return sm_status_new(SM_INVALID_ARGUMENT, "asset file name \"%s\" must be a plain file name",
                         filename ? filename : "(null)");
  if (!source_path || !sm__path_exists(source_path))
    return sm_status_new(SM_NOT_FOUND, "asset %s: source file %s does not exist", filename,
                         source_path ? source_path : "(null)");
  for (size_t i = 0; i < g->nassets; i++)
    if (!strcmp(g->assets[i].filename, filename) && strcmp(g->assets[i].source, source_path))
      return sm_status_new(SM_ALREADY_EXISTS, "asset %s is already taken from %s", filename, g->assets[i].source);
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_STRING, 0, NULL, &t);
  if (s) return s;
  s = sm_tensor_set_string(t, 0, source_path, strlen(source_path));
  const char *node = NULL;
  if (!s) s = sm_graph_const(g, name ? name : "asset_path", t, &node);
  sm_tensor_free(t);
  if (s) return s;
  struct asset a = {sm__b_strdup(node), sm__b_strdup(filename), sm__b_strdup(source_path)};
  struct asset *na = realloc(g->assets, (g->nassets + 1) * sizeof *na);
  if (na) g->assets = na;
  if (!na || !a.node || !a.filename || !a.source) {
    free(a.node);
    free(a.filename);
    free(a.source);
    return oom();
  }
  g->assets[g->nassets++] = a;
  if (out) *out = node;
  return NULL;
}

sm_status *sm_graph_set_main_op(sm_graph *g, const char *node) {
  if (!node || !smap_find(&g->nodes, node))
    return sm_status_new(SM_NOT_FOUND, "main op \"%s\": no such node in the graph", node ? node : "(null)");
  char *c = sm__b_strdup(node);
  if (!c) return oom();
  free(g->main_op);
  g->main_op = c;
  return NULL;
}

size_t sm_graph_num_assets(const sm_graph *g) { return g->nassets; }
void sm_graph_asset_at(const sm_graph *g, size_t i, const char **node, const char **filename, const char **source) {
  if (node) *node = g->assets[i].node;
  if (filename) *filename = g->assets[i].filename;
  if (source) *source = g->assets[i].source;
}
const char *sm_graph_main_op(const sm_graph *g) { return g->main_op; }

sm_status *sm_graph_label_vocabulary(sm_graph *g, const char *filename, const char *source_path, const char **table) {
  const char *path = NULL, *tab = NULL, *init = NULL, *all = NULL;
  sm_status *s = sm_graph_asset(g, "asset_path", filename, source_path, &path);
  if (s) return s;
  size_t n = strlen(filename) + 32;
  char *shared = malloc(n);
  if (!shared) return oom();
  snprintf(shared, n, "hash_table_%s_-1_-2", filename); /* as index_to_string_table_from_file names it */
  sm_op *op = sm_op_begin(g, "HashTableV2", "label_table");
  sm_op_attr_string(op, "shared_name", shared, strlen(shared));
  sm_op_attr_type(op, "key_dtype", SM_INT64);
  sm_op_attr_type(op, "value_dtype", SM_STRING);
  free(shared);
  s = sm_op_finish(op, &tab);
  if (!s) {
    op = sm_op_begin(g, "InitializeTableFromTextFileV2", "text_file_init/InitializeTableFromTextFileV2");
    sm_op_input(op, tab);
    sm_op_input(op, path);
    sm_op_attr_int(op, "key_index", -1);  /* TextFileIndex.LINE_NUMBER */
    sm_op_attr_int(op, "value_index", -2); /* TextFileIndex.WHOLE_LINE */
    sm_op_attr_bool(op, "_has_manual_control_dependencies", 1);
    s = sm_op_finish(op, &init);
  }
  char *ctl = init ? malloc(strlen(init) + 2) : NULL;
  if (!s && !ctl) s = oom();
  if (!s) {
    snprintf(ctl, strlen(init) + 2, "^%s", init);
    op = sm_op_begin(g, "NoOp", "init_all_tables");
    sm_op_input(op, ctl);
    s = sm_op_finish(op, &all);
  }
  free(ctl);
  if (!s) s = sm_graph_set_main_op(g, all);
  if (!s && table) *table = tab;
  return s ? sm_status_prefix(s, "label vocabulary %s", filename) : NULL;
}

sm_status *sm_graph_lookup(sm_graph *g, const char *table, const char *ids, const char *default_value,
                           const char **out) {
  sm_tensor *t;
  const char *def = NULL;
  sm_status *s = sm_tensor_new(SM_STRING, 0, NULL, &t);
  if (s) return s;
  s = sm_tensor_set_string(t, 0, default_value ? default_value : "", default_value ? strlen(default_value) : 0);
  if (!s) s = sm_graph_const(g, "Const", t, &def);
  sm_tensor_free(t);
  if (s) return s;
  size_t n = strlen(table) + 8;
  char *nm = malloc(n);
  if (!nm) return oom();
  snprintf(nm, n, "%s_Lookup", table);
  s = sm_graph_push_scope(g, nm, NULL);
  free(nm);
  if (s) return s;
  sm_op *op = sm_op_begin(g, "LookupTableFindV2", NULL);
  sm_op_input(op, table);
  sm_op_input(op, ids);
  sm_op_input(op, def);
  s = sm_op_finish(op, out);
  sm_graph_pop_scope(g);
  return s;
}

static int cmp_opdef(const void *a, const void *b) {
  return strcmp((*(Tensorflow__OpDef *const *)a)->name, (*(Tensorflow__OpDef *const *)b)->name);
}

sm_status *sm_graph_stripped_op_list(const sm_graph *g, Tensorflow__OpList **out) {
  *out = NULL;
  Tensorflow__OpList *ol = malloc(sizeof *ol);
  if (!ol) return oom();
  tensorflow__op_list__init(ol);
  sm_status *s = NULL;
  for (size_t i = 0; i < g->gd->n_node && !s; i++) {
    const Tensorflow__OpDef *d = g->info[i].def;
    int seen = 0;
    for (size_t j = 0; j < ol->n_op && !seen; j++) seen = !strcmp(ol->op[j]->name, d->name);
    if (seen) continue;
    ProtobufCMessage *c;
    s = sm__b_clone(&d->base, &c);
    if (!s && !sm__b_push(&ol->op, &ol->n_op, c)) {
      protobuf_c_message_free_unpacked(c, NULL);
      s = oom();
    }
  }
  if (s) {
    protobuf_c_message_free_unpacked(&ol->base, NULL);
    return s;
  }
  if (ol->n_op) qsort(ol->op, ol->n_op, sizeof *ol->op, cmp_opdef);
  *out = ol;
  return NULL;
}

/* Keeps str (malloc'ed) for the graph's lifetime; NULL (str freed) on out of memory. */
static const char *own(sm_graph *g, char *str) {
  if (!str) return NULL;
  char **v = realloc(g->strs, (g->nstrs + 1) * sizeof *v);
  if (!v) {
    free(str);
    return NULL;
  }
  g->strs = v;
  g->strs[g->nstrs++] = str;
  return str;
}

static sm_status *string_vector(sm_graph *g, const char *name, const char *const *v, size_t n, const char **out) {
  int64_t d = (int64_t)n;
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_STRING, 1, &d, &t);
  for (size_t i = 0; i < n && !s; i++) s = sm_tensor_set_string(t, (int64_t)i, v[i], strlen(v[i]));
  if (!s) s = sm_graph_const(g, name, t, out);
  sm_tensor_free(t);
  return s;
}

sm_status *sm_graph_parse_example(sm_graph *g, const char *name, const char *serialized,
                                  const sm_dense_feature *features, size_t n, const char **values) {
  sm_status *s = NULL;
  if (!n) return sm_status_new(SM_INVALID_ARGUMENT, "parse example: no features");
  for (size_t i = 0; i < n; i++) {
    const sm_dense_feature *f = &features[i];
    if (!f->key || !*f->key) return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature %zu has no key", i);
    if (f->dtype != SM_FLOAT && f->dtype != SM_INT64 && f->dtype != SM_STRING)
      return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature \"%s\": dtype %s; a tf.Example holds "
                           "float, int64 or bytes", f->key, dtname(f->dtype));
    if (f->rank < 0) return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature \"%s\": shape must be known",
                                          f->key);
    int64_t count = 1;
    for (int j = 0; j < f->rank; j++) {
      if (f->dims[j] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature \"%s\": dimension %d is unknown (%lld)",
                             f->key, j, (long long)f->dims[j]);
      count = f->dims[j] && count > INT64_MAX / f->dims[j] ? -1 : count * f->dims[j];
      if (count < 0) return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature \"%s\": shape too large", f->key);
    }
    if (f->default_value) {
      if (sm_tensor_dtype(f->default_value) != f->dtype)
        return sm_status_new(SM_INVALID_ARGUMENT, "parse example: feature \"%s\": default is %s, feature %s", f->key,
                             dtname(sm_tensor_dtype(f->default_value)), dtname(f->dtype));
      if (sm_tensor_num_elements(f->default_value) != count && sm_tensor_num_elements(f->default_value) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "parse example: feature \"%s\": default has %lld values, the shape %lld", f->key,
                             (long long)sm_tensor_num_elements(f->default_value), (long long)count);
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(features[j].key, f->key))
        return sm_status_new(SM_ALREADY_EXISTS, "parse example: feature \"%s\" given twice", f->key);
  }
  const char **keys = calloc(n, sizeof *keys), **defs = calloc(n, sizeof *defs);
  int *types = calloc(n, sizeof *types), *ranks = calloc(n, sizeof *ranks);
  const int64_t **dims = calloc(n, sizeof *dims);
  const char *node = NULL, *names = NULL, *sparse = NULL, *dense = NULL, *ragged = NULL;
  if (!keys || !defs || !types || !ranks || !dims) s = oom();
  for (size_t i = 0; i < n && !s; i++) {
    keys[i] = features[i].key;
    types[i] = features[i].dtype;
    ranks[i] = features[i].rank;
    dims[i] = features[i].dims;
  }
  if (!s) s = sm_graph_push_scope(g, name ? name : "ParseExample", NULL);
  if (s) goto done;
  /* as tf.io.parse_example builds it: empty names, sparse and ragged keys; a required feature's
   * default is an empty tensor */
  if (!s) s = string_vector(g, "Const", NULL, 0, &names);
  if (!s) s = string_vector(g, "Const", NULL, 0, &sparse);
  for (size_t i = 0; i < n && !s; i++) {
    if (features[i].default_value) {
      s = sm_graph_const(g, "Const", features[i].default_value, &defs[i]);
    } else {
      int64_t zero = 0;
      sm_tensor *t;
      s = sm_tensor_new(features[i].dtype, 1, &zero, &t);
      if (!s) s = sm_graph_const(g, "Const", t, &defs[i]);
      sm_tensor_free(t);
    }
  }
  if (!s) s = string_vector(g, "ParseExampleV2/dense_keys", keys, n, &dense);
  if (!s) s = string_vector(g, "Const", NULL, 0, &ragged);
  if (!s) {
    sm_op *op = sm_op_begin(g, "ParseExampleV2", NULL);
    sm_op_input(op, serialized);
    sm_op_input(op, names);
    sm_op_input(op, sparse);
    sm_op_input(op, dense);
    sm_op_input(op, ragged);
    for (size_t i = 0; i < n; i++) sm_op_input(op, defs[i]);
    sm_op_attr_type_list(op, "Tdense", types, n);
    sm_op_attr_int(op, "num_sparse", 0);
    sm_op_attr_type_list(op, "sparse_types", NULL, 0);
    sm_op_attr_type_list(op, "ragged_value_types", NULL, 0);
    sm_op_attr_type_list(op, "ragged_split_types", NULL, 0);
    sm_op_attr_shape_list(op, "dense_shapes", ranks, dims, n);
    s = sm_op_finish(op, &node);
  }
  sm_graph_pop_scope(g);
  for (size_t i = 0; i < n && !s; i++) {
    size_t l = strlen(node) + 24;
    char *t = malloc(l);
    if (t) snprintf(t, l, "%s:%zu", node, i);
    if (!(values[i] = own(g, t))) s = oom();
  }
done:
  free(keys);
  free(defs);
  free(types);
  free(ranks);
  free(dims);
  return s;
}
