/* graph_builder.h - build a TensorFlow GraphDef from C, checked against TensorFlow's OpDefs.
 *
 * A graph owns a Tensorflow__GraphDef made of malloc'ed pieces. Nodes are added in the style of
 * TensorFlow's C API: sm_op_begin, inputs and attrs, sm_op_finish. Finish checks the node against
 * the built-in OpDef table (the ops this library knows, copied from TensorFlow's registry): the
 * op must be known, inputs must match its args in number and dtype, attrs must be declared with
 * the right kind and allowed values; type and number attrs (T, N, dtypes) are inferred from the
 * inputs when not set, and missing attrs with defaults get them, as TensorFlow's graph
 * construction does. Errors are kept until finish, so calls can be chained without checks.
 *
 * Node names are made unique the way TensorFlow does it: the first "x" is "x", then "x_1",
 * "x_2"; a name of NULL uses the op type. sm_graph_push_scope("save") prefixes later names with
 * "save/".
 *
 * Tensors are named "node:index" ("x:0"); an input "x" means "x:0", "^x" a control input. */
#ifndef SAVEDMODEL_GRAPH_BUILDER_H
#define SAVEDMODEL_GRAPH_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "graph.pb-c.h"
#include "op_def.pb-c.h"
#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_graph sm_graph;
typedef struct sm_op sm_op;

/* A new empty graph. The caller owns *out and frees it with sm_graph_free. */
SM_API sm_status *sm_graph_new(sm_graph **out);
SM_API void sm_graph_free(sm_graph *g); /* NULL-safe */

/* The GraphDef built so far; owned by the graph, valid until the next change. */
SM_API const Tensorflow__GraphDef *sm_graph_def(const sm_graph *g);

/* Name scopes: names of nodes added after a push are "scope/name" (nested scopes join with
 * '/'). The scope name itself is made unique like a node name ("save", then "save_1"); the
 * name used is returned in *used (owned by the graph; may be NULL). */
SM_API sm_status *sm_graph_push_scope(sm_graph *g, const char *scope, const char **used);
SM_API void sm_graph_pop_scope(sm_graph *g);

/* A node under construction. sm_op_begin never fails: problems (unknown op, a bad input) are
 * reported by sm_op_finish, which also frees the sm_op whether it succeeds or not. */
SM_API sm_op *sm_op_begin(sm_graph *g, const char *op_type, const char *name);
SM_API void sm_op_input(sm_op *op, const char *tensor);   /* "x", "x:1" or "^x" (control) */
SM_API void sm_op_device(sm_op *op, const char *device);
SM_API void sm_op_attr_int(sm_op *op, const char *name, int64_t v);
SM_API void sm_op_attr_float(sm_op *op, const char *name, float v);
SM_API void sm_op_attr_bool(sm_op *op, const char *name, int v);
SM_API void sm_op_attr_type(sm_op *op, const char *name, int dtype);
/* rank -1: unknown rank; a dim of -1: unknown size. */
SM_API void sm_op_attr_shape(sm_op *op, const char *name, int rank, const int64_t *dims);
SM_API void sm_op_attr_string(sm_op *op, const char *name, const void *bytes, size_t len);
SM_API void sm_op_attr_tensor(sm_op *op, const char *name, const sm_tensor *t); /* copied */
SM_API void sm_op_attr_int_list(sm_op *op, const char *name, const int64_t *v, size_t n);
SM_API void sm_op_attr_float_list(sm_op *op, const char *name, const float *v, size_t n);
SM_API void sm_op_attr_type_list(sm_op *op, const char *name, const int *dtypes, size_t n);
SM_API void sm_op_attr_string_list(sm_op *op, const char *name, const char *const *v, size_t n);
/* A list of shapes: shape i has rank ranks[i] (-1 unknown) and dims[i]. */
SM_API void sm_op_attr_shape_list(sm_op *op, const char *name, const int *ranks, const int64_t *const *dims, size_t n);
/* Checks and adds the node. *name_out (may be NULL) gets its unique name, owned by the graph. */
SM_API sm_status *sm_op_finish(sm_op *op, const char **name_out);

/* What the graph knows about a tensor "node:i": dtype and, where the builder could infer it,
 * shape (*rank = -1 when unknown; dims points into the graph, valid until the next change). */
SM_API sm_status *sm_graph_tensor(const sm_graph *g, const char *tensor, int *dtype, int *rank,
                                  const int64_t **dims);

/* ---- helpers; each returns the new node's name in *out (owned by the graph) ---- */
SM_API sm_status *sm_graph_placeholder(sm_graph *g, const char *name, int dtype, int rank, const int64_t *dims,
                                       const char **out);
SM_API sm_status *sm_graph_const(sm_graph *g, const char *name, const sm_tensor *value, const char **out);
/* One-input ops (Identity, Square, Relu, Neg, ...) and two-input ops (Mul, AddV2, Sub, MatMul). */
SM_API sm_status *sm_graph_unary(sm_graph *g, const char *op_type, const char *name, const char *x, const char **out);
SM_API sm_status *sm_graph_binary(sm_graph *g, const char *op_type, const char *name, const char *x, const char *y,
                                  const char **out);

/* A resource variable as TF1's tf.compat.v1.get_variable makes it: NAME/Initializer/initial_value
 * (Const), NAME (VarHandleOp), NAME/IsInitialized/VarIsInitializedOp, NAME/Assign,
 * NAME/Read/ReadVariableOp. The value is copied; it is what a SavedModel builder saves, and the
 * initial value too when it is at most SM_GRAPH_INLINE_INITIAL_BYTES (larger ones start as zeros,
 * written compactly, so the graph stays small). *read_out gets "NAME/Read/ReadVariableOp"
 * (owned by the graph). */
#define SM_GRAPH_INLINE_INITIAL_BYTES 1024
SM_API sm_status *sm_graph_variable(sm_graph *g, const char *name, const sm_tensor *value, const char **read_out);
/* Variables in creation order: name of the VarHandleOp node and its value (owned by the graph). */
SM_API size_t sm_graph_num_variables(const sm_graph *g);
SM_API void sm_graph_variable_at(const sm_graph *g, size_t i, const char **name, const sm_tensor **value);

/* ---- assets, main op, label vocabularies ---- */
/* An asset file: the file at source_path is copied into the export's assets/ as `filename` (a
 * plain file name). Adds a DT_STRING Const node `name` holding source_path; TensorFlow's loaders
 * feed it the exported copy's path when they run the main op. *out gets the node name. */
SM_API sm_status *sm_graph_asset(sm_graph *g, const char *name, const char *filename, const char *source_path,
                                 const char **out);
/* The op TensorFlow's loaders run after restoring variables (collection saved_model_main_op). */
SM_API sm_status *sm_graph_set_main_op(sm_graph *g, const char *node);
/* A label vocabulary: source_path (one label per line) becomes asset `filename`, read into a
 * HashTableV2 from line number (int64) to label (string) by InitializeTableFromTextFileV2, as
 * tf.lookup.index_to_string_table_from_file does; the main op "init_all_tables" runs the
 * initializer at load. *table gets the table node's name. */
SM_API sm_status *sm_graph_label_vocabulary(sm_graph *g, const char *filename, const char *source_path,
                                            const char **table);
/* Looks int64 ids up in a table (LookupTableFindV2); unknown ids give default_value. */
SM_API sm_status *sm_graph_lookup(sm_graph *g, const char *table, const char *ids, const char *default_value,
                                  const char **out);
/* ---- tf.Example input ---- */
/* One dense feature of a tf.train.Example: its key, dtype (SM_FLOAT, SM_INT64 or SM_STRING, the
 * three kinds of values a Feature holds) and the shape of one example's value (rank 0 =
 * scalar, every dim known). default_value (NULL = the feature is required) has that many
 * values, or one. */
typedef struct sm_dense_feature {
  const char *key;
  int dtype;
  int rank;
  const int64_t *dims;
  const sm_tensor *default_value;
} sm_dense_feature;
/* Parses a DT_STRING vector of serialized tf.Examples with ParseExampleV2, as
 * tf.io.parse_example does: node "<scope>/ParseExampleV2" (scope `name`, default
 * "ParseExample"). values[i] (an array of n the caller provides) gets the tensor name of feature
 * i's values, shape [batch] + its shape (names owned by the graph). A missing required feature or
 * a value count that does not match the shape fails the run, as in TensorFlow. */
SM_API sm_status *sm_graph_parse_example(sm_graph *g, const char *name, const char *serialized,
                                         const sm_dense_feature *features, size_t n, const char **values);

SM_API size_t sm_graph_num_assets(const sm_graph *g);
SM_API void sm_graph_asset_at(const sm_graph *g, size_t i, const char **node, const char **filename,
                              const char **source);
SM_API const char *sm_graph_main_op(const sm_graph *g); /* NULL when none */

/* The OpDefs of the ops used in the graph, sorted by name, as TensorFlow writes stripped_op_list.
 * The caller frees *out with protobuf_c_message_free_unpacked(&(*out)->base, NULL). */
SM_API sm_status *sm_graph_stripped_op_list(const sm_graph *g, Tensorflow__OpList **out);

/* The built-in OpDef for op_type, or NULL when this library does not know it. Owned by the
 * library (parsed once; the first call is not thread-safe against itself — call once at start
 * if graphs are built from several threads). */
SM_API const Tensorflow__OpDef *sm_op_def(const char *op_type);

#ifdef __cplusplus
}
#endif
#endif
