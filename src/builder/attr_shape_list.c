/* attr_shape_list.c - list(shape) attrs on nodes already in a graph (ParseExample's dense_shapes):
 * graph_builder.h has no sm_op_attr_shape_list yet, so a caller finishes the node with an empty
 * list and fills the shapes in here. Owned by the trainer's exporter (src/train/export.c). */
#include <stdlib.h>
#include <string.h>

#include "builder/attr_shape_list.h"
#include "builder/builder_internal.h"

sm_status *sm_graph_set_shape_list(sm_graph *g, const char *node, const char *attr, size_t n, const int *ranks,
                                   const int64_t *const *dims) {
  Tensorflow__GraphDef *gd = (Tensorflow__GraphDef *)sm_graph_def(g);
  Tensorflow__NodeDef *nd = NULL;
  for (size_t i = 0; i < gd->n_node && !nd; i++)
    if (!strcmp(gd->node[i]->name, node)) nd = gd->node[i];
  if (!nd) return sm_status_new(SM_NOT_FOUND, "node \"%s\": no such node in the graph", node);
  Tensorflow__AttrValue *v = NULL;
  for (size_t i = 0; i < nd->n_attr && !v; i++)
    if (!strcmp(nd->attr[i]->key, attr)) v = nd->attr[i]->value;
  if (!v || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !v->list)
    return sm_status_new(SM_FAILED_PRECONDITION, "node \"%s\": attr %s must already be a list", node, attr);
  Tensorflow__AttrValue__ListValue *l = v->list;
  if (l->n_s + l->n_i + l->n_f + l->n_b + l->n_type + l->n_shape + l->n_tensor + l->n_func)
    return sm_status_new(SM_FAILED_PRECONDITION, "node \"%s\": attr %s is not empty", node, attr);
  Tensorflow__TensorShapeProto **shapes = calloc(n ? n : 1, sizeof *shapes);
  if (!shapes) return sm_status_new(SM_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n; i++) {
    if (!(shapes[i] = sm_b_shape(ranks[i], dims[i]))) {
      for (size_t j = 0; j < i; j++) protobuf_c_message_free_unpacked(&shapes[j]->base, NULL);
      free(shapes);
      return sm_status_new(SM_NO_MEMORY, "out of memory");
    }
  }
  free(l->shape);
  l->shape = shapes;
  l->n_shape = n;
  return NULL;
}
