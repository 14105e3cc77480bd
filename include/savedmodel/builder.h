/* builder.h - write a SavedModel the way TensorFlow's SavedModelBuilder does.
 *
 *   sm_builder_new(dir)                     refuses a dir that exists
 *   sm_builder_add_meta_graph_and_variables the first MetaGraph; saves the graph's variables
 *   sm_builder_add_meta_graph               more MetaGraphs (other tag sets) sharing them
 *   sm_builder_save(as_text)                writes everything beside the target, renames it in
 *
 * Each MetaGraph gets TF1's Saver subgraph (save/Const, save/SaveV2 ... save/restore_all, sharded
 * V2) and its SaverDef, so TensorFlow's own loaders restore the variables from
 * variables/variables. Signatures are checked against the graph and TensorFlow's rules for
 * their method before anything is added. A graph with a main op (sm_graph_set_main_op, label
 * vocabularies) gets the signature "__saved_model_init_op" naming it, as TF 2.x's builder writes
 * its init_op, besides TF1's saved_model_main_op collection; the keys "__saved_model_init_op"
 * and "__saved_model_train_op" are refused for user signatures, as TensorFlow refuses them. */
#ifndef SAVEDMODEL_BUILDER_H
#define SAVEDMODEL_BUILDER_H

#include <stddef.h>

#include "fingerprint.pb-c.h"
#include "meta_graph.pb-c.h"
#include "savedmodel/api.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- signatures ---- */
typedef struct sm_signature sm_signature;

/* A signature stored under `key` in the signature map, with method_name `method` (e.g.
 * SM_PREDICT_METHOD_NAME). The caller owns *out (sm_signature_free). */
SM_API sm_status *sm_signature_new(const char *key, const char *method, sm_signature **out);
SM_API void sm_signature_free(sm_signature *s); /* NULL-safe */
/* Tensor info with explicit dtype and shape (rank -1 = unknown), as build_tensor_info writes. */
SM_API sm_status *sm_signature_add_input(sm_signature *s, const char *key, const char *tensor, int dtype, int rank,
                                         const int64_t *dims);
SM_API sm_status *sm_signature_add_output(sm_signature *s, const char *key, const char *tensor, int dtype, int rank,
                                          const int64_t *dims);
/* The same, with dtype and shape taken from the graph (the tensor must be in it). */
SM_API sm_status *sm_signature_add_input_from(sm_signature *s, const char *key, const sm_graph *g, const char *tensor);
SM_API sm_status *sm_signature_add_output_from(sm_signature *s, const char *key, const sm_graph *g, const char *tensor);
/* predict signature key -> method PREDICT with one input and one output, from the graph. */
SM_API sm_status *sm_signature_predict(const char *key, const sm_graph *g, const char *in_key, const char *in_tensor,
                                       const char *out_key, const char *out_tensor, sm_signature **out);
/* classify: input "inputs" (serialized tf.Examples, DT_STRING); outputs "classes" and/or "scores"
 * (either tensor may be NULL, not both). regress: input "inputs", output "outputs". As
 * build_classification_signature_def / build_regression_signature_def; the result is validated. */
SM_API sm_status *sm_signature_classify(const char *key, const sm_graph *g, const char *examples, const char *classes,
                                        const char *scores, sm_signature **out);
SM_API sm_status *sm_signature_regress(const char *key, const sm_graph *g, const char *examples, const char *outputs,
                                       sm_signature **out);
SM_API const Tensorflow__SignatureDef *sm_signature_def(const sm_signature *s);
SM_API const char *sm_signature_key(const sm_signature *s);

/* TensorFlow's rules: predict has >= 1 input and >= 1 output; classify has exactly one DT_STRING
 * input "inputs" and outputs "classes" (DT_STRING) and/or "scores" (DT_FLOAT), nothing else;
 * regress has one DT_STRING input "inputs" and one DT_FLOAT output "outputs". Other methods need
 * only be non-empty. With a graph, every tensor named must exist in it with the stated dtype. */
SM_API sm_status *sm_signature_validate(const sm_signature *s, const sm_graph *g);

/* ---- the builder ---- */
typedef struct sm_builder sm_builder;

/* Fails (ALREADY_EXISTS) when export_dir exists, as TensorFlow does. Nothing is written until
 * save. The caller owns *out (sm_builder_free). */
SM_API sm_status *sm_builder_new(const char *export_dir, sm_builder **out);
SM_API void sm_builder_free(sm_builder *b); /* NULL-safe; a builder that never saved leaves no files */

/* Adds the first MetaGraph. The graph's variables (sm_graph_variable) are what variables/ will
 * hold; the Saver subgraph is added to g (once per graph). Signatures are copied. */
SM_API sm_status *sm_builder_add_meta_graph_and_variables(sm_builder *b, sm_graph *g, const char *const *tags,
                                                          size_t ntags, sm_signature *const *sigs, size_t nsigs);
/* Adds another MetaGraph; its variables must be among those already added (same dtype and
 * shape). A tag set equal to one already added (order ignored) is refused. */
SM_API sm_status *sm_builder_add_meta_graph(sm_builder *b, sm_graph *g, const char *const *tags, size_t ntags,
                                            sm_signature *const *sigs, size_t nsigs);

/* Writes saved_model.pb (or .pbtxt), variables/, assets/ and (binary form only, as TensorFlow)
 * fingerprint.pb into "<parent>/.tmp-<name>-<pid>", then renames that directory to export_dir
 * with renameat2(RENAME_NOREPLACE) (plain rename after an exists check where the kernel or file
 * system lacks it): no half-written export is ever visible there, and one that appeared
 * meanwhile is never replaced (ALREADY_EXISTS). Temp dirs of earlier builders for the same
 * target whose process is dead (killed mid-save) are removed first.
 *
 * Variables go to one shard, variables.data-00000-of-00001: TF's sharded Saver writes one shard
 * per device that holds variables, and every variable here lives on the CPU, as in TensorFlow's
 * own CPU exports. The Saver subgraph is the sharded one, so TF restores it either way. */
SM_API sm_status *sm_builder_save(sm_builder *b, int as_text);

/* ---- fingerprint.pb ---- */
/* FingerprintDef of the SavedModel in export_dir (its saved_model.pb and
 * variables/variables.index) as TensorFlow 2.x computes it: saved_model_checksum,
 * graph_def_program_hash, signature_def_hash, saved_object_graph_hash, checkpoint_hash (FarmHash
 * Fingerprint64 over TensorFlow's deterministic serializations), a random uuid and version
 * producer SM_FINGERPRINT_PRODUCER. The caller frees *out with
 * protobuf_c_message_free_unpacked(&(*out)->base, NULL). */
#define SM_FINGERPRINT_PRODUCER 4 /* what TensorFlow 2.21 writes */
SM_API sm_status *sm_saved_model_fingerprint(const char *export_dir, Tensorflow__FingerprintDef **out);
/* Computes the above and writes export_dir/fingerprint.pb (sm_builder_save does this). */
SM_API sm_status *sm_saved_model_write_fingerprint(const char *export_dir);

#ifdef __cplusplus
}
#endif
#endif
