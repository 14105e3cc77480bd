/* attrs.c - typed access to a compiled node's attrs; errors name the node, the op and the attr. */
#include <string.h>

#include "graph/graph_internal.h"

static sm_status *get(const sm_node *n, const char *name, int kind, const Tensorflow__AttrValue **out) {
  if (!n || !name) return sm_status_new(SM_INVALID_ARGUMENT, "attr lookup without a node or a name");
  const Tensorflow__AttrValue *v = sm__node_attr(n, name);
  if (!v) return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): no attr '%s'", n->name, n->op, name);
  int got = v->value_case;
  /* An unset value is how an empty list may arrive. */
  if (got != kind && !(kind == TENSORFLOW__ATTR_VALUE__VALUE_LIST && got == TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET))
    return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' is %s, not %s", n->name, n->op, name,
                         sm__attr_kind_name(got), sm__attr_kind_name(kind));
  *out = v;
  return NULL;
}

sm_status *sm__node_attr_int(const sm_node *n, const char *name, int64_t *v) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_I, &a);
  if (!s) *v = a->i;
  return s;
}

sm_status *sm__node_attr_float(const sm_node *n, const char *name, float *v) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_F, &a);
  if (!s) *v = a->f;
  return s;
}

sm_status *sm__node_attr_bool(const sm_node *n, const char *name, int *v) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_B, &a);
  if (!s) *v = a->b ? 1 : 0;
  return s;
}

sm_status *sm__node_attr_type(const sm_node *n, const char *name, int *dtype) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_TYPE, &a);
  if (!s) *dtype = (int)a->type;
  return s;
}

sm_status *sm__node_attr_string(const sm_node *n, const char *name, const char **str, size_t *len) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_S, &a);
  if (s) return s;
  *str = a->s.data ? (const char *)a->s.data : "";
  if (len) *len = a->s.len;
  return NULL;
}

sm_status *sm__node_attr_ints(const sm_node *n, const char *name, const int64_t **v, size_t *count) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_LIST, &a);
  if (s) return s;
  int has = a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && a->list;
  *v = has ? a->list->i : NULL;
  *count = has ? a->list->n_i : 0;
  return NULL;
}

sm_status *sm__node_attr_strings(const sm_node *n, const char *name, const ProtobufCBinaryData **v, size_t *count) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_LIST, &a);
  if (s) return s;
  int has = a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && a->list;
  *v = has ? a->list->s : NULL;
  *count = has ? a->list->n_s : 0;
  return NULL;
}

sm_status *sm__node_attr_types(const sm_node *n, const char *name, const int **v, size_t *count) {
  /* protobuf-c forces enums to int size, so the DataType array reads as ints. */
  _Static_assert(sizeof(Tensorflow__DataType) == sizeof(int), "DataType is int-sized");
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_LIST, &a);
  if (s) return s;
  int has = a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && a->list;
  *v = has ? (const int *)a->list->type : NULL;
  *count = has ? a->list->n_type : 0;
  return NULL;
}

sm_status *sm__node_attr_shape(const sm_node *n, const char *name, int *rank, int64_t dims[SM_MAX_RANK]) {
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_SHAPE, &a);
  if (s) return s;
  const Tensorflow__TensorShapeProto *p = a->shape;
  if (!p) { /* an empty shape message: a scalar */
    *rank = 0;
    return NULL;
  }
  if (p->unknown_rank) {
    *rank = -1;
    return NULL;
  }
  if (p->n_dim > SM_MAX_RANK)
    return sm_status_new(SM_UNIMPLEMENTED, "node '%s' (%s): attr '%s' has rank %zu, more than %d", n->name, n->op,
                         name, p->n_dim, SM_MAX_RANK);
  for (size_t i = 0; i < p->n_dim; i++) {
    int64_t d = p->dim[i] ? p->dim[i]->size : 0;
    if (d < -1)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' has dimension %zu = %lld", n->name, n->op,
                           name, i, (long long)d);
    dims[i] = d;
  }
  *rank = (int)p->n_dim;
  return NULL;
}

sm_status *sm__node_attr_tensor(const sm_node *n, const char *name, sm_tensor **out) {
  *out = NULL;
  const Tensorflow__AttrValue *a;
  sm_status *s = get(n, name, TENSORFLOW__ATTR_VALUE__VALUE_TENSOR, &a);
  if (s) return s;
  if (!a->tensor) return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' holds no tensor", n->name, n->op, name);
  s = sm__tensor_from_proto(a->tensor, out);
  if (s) s = sm_status_prefix(s, "node '%s' (%s): attr '%s'", n->name, n->op, name);
  return s;
}
