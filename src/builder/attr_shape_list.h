/* attr_shape_list.h - set a list(shape) attr on a node already added to a graph. */
#ifndef SM_BUILDER_ATTR_SHAPE_LIST_H
#define SM_BUILDER_ATTR_SHAPE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/graph_builder.h"

/* The node must carry `attr` as an empty list (finish it with e.g. sm_op_attr_int_list(op, attr,
 * NULL, 0)); it becomes the n shapes ranks[i]/dims[i] (rank -1: unknown). */
sm_status *sm_graph_set_shape_list(sm_graph *g, const char *node, const char *attr, size_t n, const int *ranks,
                                   const int64_t *const *dims);

#endif
