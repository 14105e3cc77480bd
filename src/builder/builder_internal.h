/* builder_internal.h - what the graph builder, signatures and SavedModel builder share:
 * malloc-owned protobuf pieces (freed with protobuf_c_message_free_unpacked) and graph internals. */
#ifndef SM_BUILDER_INTERNAL_H
#define SM_BUILDER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attr_value.pb-c.h"
#include "graph/op_defs.h"
#include "savedmodel/graph_builder.h"
#include "tensor.pb-c.h"
#include "tensor_shape.pb-c.h"

/* malloc'ed copies; NULL on out of memory. */
char *sm__b_strdup(const char *s);
/* Appends item to a malloc'ed array of pointers (*arr, *n); 0 on out of memory. */
int sm__b_push(void *arr_ptr, size_t *n, void *item);
/* A TensorShapeProto for rank/dims (rank -1: unknown_rank). */
Tensorflow__TensorShapeProto *sm__b_shape(int rank, const int64_t *dims);
/* A TensorProto holding t's dtype, shape and values, as tf.make_tensor_proto writes them. */
sm_status *sm__b_tensor_proto(const sm_tensor *t, Tensorflow__TensorProto **out);
/* Zeros of a shape in TensorFlow's compact form (one typed value, repeated to fill);
 * UNIMPLEMENTED for dtypes without a typed field (complex). */
sm_status *sm__b_zeros_proto(int dtype, int rank, const int64_t *dims, Tensorflow__TensorProto **out);
/* A deep, malloc-owned copy of any message (pack + unpack). */
sm_status *sm__b_clone(const ProtobufCMessage *m, ProtobufCMessage **out);

/* The tensor name "node:0" for "node", unchanged when it already has ":i". malloc'ed. */
char *sm__b_tensor_name(const char *t);

/* Per-graph Saver bookkeeping for the SavedModel builder. */
typedef struct sm_graph_saver {
  int added;
  char *filename_tensor; /* "save/Const:0" */
  char *save_tensor;     /* "save/Identity:0" */
  char *restore_op;      /* "save/restore_all" */
} sm_graph_saver;
sm_graph_saver *sm__graph_saver_state(sm_graph *g);
/* Index of a variable by VarHandleOp name; -1 when absent. */
long sm__graph_find_variable(const sm_graph *g, const char *name);
/* Name of the VariableDef-style pieces of variable i: its Assign initializer and initial value. */
const char *sm__graph_variable_assign(const sm_graph *g, size_t i);
const char *sm__graph_variable_initial(const sm_graph *g, size_t i);
/* 1 when a node of that name exists. */
int sm__graph_has_node(const sm_graph *g, const char *name);

#endif
