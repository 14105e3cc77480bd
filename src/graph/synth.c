/* synth.c - synthetic nodes (synth.h): building an sm_node outside compilation, with attr values
 * owned by the node. Every value is a deep copy made by packing an AttrValue and unpacking it again
 * (protobuf-c's own allocation), so one free path serves copies and values set here alike. */
#include "graph/synth.h"

#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

/* The node and what it owns beyond sm_node's own arrays. n is first: an sm_node * made here is a
 * synth *. */
typedef struct synth {
  sm_node n;
  int cap_in, cap_ctl, cap_attrs;
} synth;

static sm_status *oom(const sm_node *n) {
  return sm_status_new(SM_NO_MEMORY, "out of memory building node '%s' (%s)", n->name, n->op);
}

static char *dupstr(const char *s) {
  size_t len = strlen(s) + 1;
  char *d = malloc(len);
  if (d) memcpy(d, s, len);
  return d;
}

sm_status *sm__synth_new(const sm_cgraph *g, const char *name, const char *op, sm_node **out) {
  *out = NULL;
  if (!g || !name || !op) return sm_status_new(SM_INVALID_ARGUMENT, "synthetic node: no graph, name or op");
  const Tensorflow__OpDef *def = sm__cgraph_op_def(g, op);
  if (!def) return sm_status_new(SM_NOT_FOUND, "synthetic node '%s': op '%s' has no OpDef", name, op);
  synth *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory building node '%s' (%s)", name, op);
  s->n.name = dupstr(name);
  s->n.op = dupstr(op);
  s->n.device = "";
  s->n.def = def;
  s->n.stateful = def->is_stateful;
  if (!s->n.name || !s->n.op) {
    sm__synth_free(&s->n);
    return sm_status_new(SM_NO_MEMORY, "out of memory building node '%s' (%s)", name, op);
  }
  *out = &s->n;
  return NULL;
}

void sm__synth_free(sm_node *n) {
  if (!n) return;
  for (int i = 0; i < n->nattrs; i++) {
    free((void *)n->attrs[i].name);
    tensorflow__attr_value__free_unpacked((Tensorflow__AttrValue *)n->attrs[i].value, NULL);
  }
  free(n->attrs);
  free(n->name);
  free((void *)n->op);
  free(n->inputs);
  free(n->in_dtypes);
  free(n->control);
  free(n->out_dtypes);
  free((synth *)n);
}

/* Grows *arr (elements of size es) to hold one more than *len. */
static int grow(void **arr, int *cap, int len, size_t es) {
  if (len < *cap) return 1;
  int nc = *cap ? *cap * 2 : 4;
  void *p = realloc(*arr, (size_t)nc * es);
  if (!p) return 0;
  *arr = p;
  *cap = nc;
  return 1;
}

sm_status *sm__synth_add_input(sm_node *n, sm_edge e) {
  synth *s = (synth *)n;
  if (!grow((void **)&n->inputs, &s->cap_in, n->ninputs, sizeof *n->inputs)) return oom(n);
  n->inputs[n->ninputs++] = e;
  return NULL;
}

sm_status *sm__synth_add_control(sm_node *n, int node) {
  synth *s = (synth *)n;
  for (int i = 0; i < n->ncontrol; i++)
    if (n->control[i] == node) return NULL;
  if (!grow((void **)&n->control, &s->cap_ctl, n->ncontrol, sizeof *n->control)) return oom(n);
  n->control[n->ncontrol++] = node;
  return NULL;
}

/* A deep copy of v, or NULL when out of memory. */
static Tensorflow__AttrValue *copy_value(const Tensorflow__AttrValue *v) {
  size_t len = tensorflow__attr_value__get_packed_size(v);
  uint8_t *buf = malloc(len + 1);
  if (!buf) return NULL;
  tensorflow__attr_value__pack(v, buf);
  Tensorflow__AttrValue *c = tensorflow__attr_value__unpack(NULL, len, buf);
  free(buf);
  return c;
}

/* Sets attr `name` to a deep copy of v, replacing one of that name. */
static sm_status *put(sm_node *n, const char *name, const Tensorflow__AttrValue *v) {
  synth *s = (synth *)n;
  Tensorflow__AttrValue *c = copy_value(v);
  if (!c) return oom(n);
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      tensorflow__attr_value__free_unpacked((Tensorflow__AttrValue *)n->attrs[i].value, NULL);
      n->attrs[i].value = c;
      return NULL;
    }
  char *nm = dupstr(name);
  if (!nm || !grow((void **)&n->attrs, &s->cap_attrs, n->nattrs, sizeof *n->attrs)) {
    free(nm);
    tensorflow__attr_value__free_unpacked(c, NULL);
    return oom(n);
  }
  n->attrs[n->nattrs].name = nm;
  n->attrs[n->nattrs++].value = c;
  return NULL;
}

sm_status *sm__synth_copy_attr(sm_node *n, const char *name, const sm_node *from, const char *from_name) {
  const Tensorflow__AttrValue *v = sm__node_attr(from, from_name);
  return v ? put(n, name, v) : NULL;
}

sm_status *sm__synth_set_int(sm_node *n, const char *name, int64_t i) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
  v.i = i;
  return put(n, name, &v);
}

sm_status *sm__synth_set_float(sm_node *n, const char *name, float f) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_F;
  v.f = f;
  return put(n, name, &v);
}

sm_status *sm__synth_set_bool(sm_node *n, const char *name, int b) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_B;
  v.b = b != 0;
  return put(n, name, &v);
}

sm_status *sm__synth_set_type(sm_node *n, const char *name, int dtype) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
  v.type = (Tensorflow__DataType)dtype;
  return put(n, name, &v);
}

sm_status *sm__synth_set_string(sm_node *n, const char *name, const char *str) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
  v.s.len = strlen(str);
  v.s.data = (uint8_t *)str; /* read only: put copies it */
  return put(n, name, &v);
}

sm_status *sm__synth_set_ints(sm_node *n, const char *name, const int64_t *i, size_t count) {
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  Tensorflow__AttrValue__ListValue l = TENSORFLOW__ATTR_VALUE__LIST_VALUE__INIT;
  l.n_i = count;
  l.i = (int64_t *)i;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
  v.list = &l;
  return put(n, name, &v);
}

sm_status *sm__synth_set_types(sm_node *n, const char *name, const int *dtypes, size_t count) {
  _Static_assert(sizeof(Tensorflow__DataType) == sizeof(int), "DataType is int-sized");
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  Tensorflow__AttrValue__ListValue l = TENSORFLOW__ATTR_VALUE__LIST_VALUE__INIT;
  l.n_type = count;
  l.type = (Tensorflow__DataType *)dtypes;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
  v.list = &l;
  return put(n, name, &v);
}

sm_status *sm__synth_set_strings(sm_node *n, const char *name, const char *const *str, size_t count) {
  ProtobufCBinaryData *b = malloc((count ? count : 1) * sizeof *b);
  if (!b) return oom(n);
  for (size_t k = 0; k < count; k++) b[k] = (ProtobufCBinaryData){strlen(str[k]), (uint8_t *)str[k]};
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  Tensorflow__AttrValue__ListValue l = TENSORFLOW__ATTR_VALUE__LIST_VALUE__INIT;
  l.n_s = count;
  l.s = b;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
  v.list = &l;
  sm_status *st = put(n, name, &v);
  free(b);
  return st;
}

sm_status *sm__synth_finish(sm_node *n) {
  const Tensorflow__OpDef *def = n->def;
  for (size_t i = 0; i < def->n_attr; i++) {
    const Tensorflow__OpDef__AttrDef *d = def->attr[i];
    const Tensorflow__AttrValue *v = sm__node_attr(n, d->name);
    if (!v) {
      if (!d->default_value)
        return sm_status_new(SM_INVALID_ARGUMENT, "synthetic node '%s' (%s): required attr '%s' is not set", n->name,
                             n->op, d->name);
      sm_status *st = put(n, d->name, d->default_value);
      if (st) return st;
      continue;
    }
    int want = sm__attr_kind_for(d->type ? d->type : "");
    int got = v->value_case;
    if (want >= 0 && got != want && !(want == TENSORFLOW__ATTR_VALUE__VALUE_LIST && got == 0))
      return sm_status_new(SM_INVALID_ARGUMENT, "synthetic node '%s' (%s): attr '%s' should be %s (%s), but is %s",
                           n->name, n->op, d->name, sm__attr_kind_name(want), d->type, sm__attr_kind_name(got));
  }
  int *in, *out, nin, nout;
  sm_status *st = sm__node_arg_dtypes(n, &in, &nin, &out, &nout);
  if (st) return sm_status_prefix(st, "synthetic node '%s'", n->name);
  if (nin != n->ninputs) {
    free(in);
    free(out);
    return sm_status_new(SM_INVALID_ARGUMENT, "synthetic node '%s' (%s) has %d data inputs, its OpDef wants %d",
                         n->name, n->op, n->ninputs, nin);
  }
  free(n->in_dtypes);
  free(n->out_dtypes);
  n->in_dtypes = in;
  n->out_dtypes = out;
  n->noutputs = nout;
  return NULL;
}
