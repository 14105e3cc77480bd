/* verify.h - checks sm_model_load makes on an export before it runs anything, shared with
 * `savedmodel validate` (src/cli/validate.c).
 *
 * Both exist because TensorFlow's loader trusts the file: an asset named "../../etc/passwd" is fed
 * to the graph as a path outside the export, and a checkpoint tensor whose shape disagrees with
 * its variable is assigned anyway (resource variables are uninitialized at restore, so
 * AssignVariableOp has nothing to compare with), leaving every later kernel to meet a shape the
 * graph never declared. */
#ifndef SM_RUNTIME_VERIFY_H
#define SM_RUNTIME_VERIFY_H

#include "graph/graph.h"
#include "savedmodel/bundle.h"
#include "savedmodel/format.h"
#include "savedmodel/status.h"

/* An asset's file name must be relative, without a ".." component, and (when the file exists)
 * resolve, symlinks followed, to a path inside export_dir. */
sm_status *sm__verify_asset_name(const char *export_dir, const char *filename);

/* The confinement rule for files kernels read (vocabularies, checkpoints): path, resolved with
 * realpath (".." and every symlink followed; relative to the working directory, as TensorFlow
 * resolves it), must lie inside export_dir, itself resolved. On success *resolved (may be NULL) is
 * the malloc'ed resolved path to open. A path that does not exist is SM_NOT_FOUND; one outside,
 * SM_FAILED_PRECONDITION naming both paths and the opt-in
 * (sm_load_options.allow_external_files, --allow_external_files). */
sm_status *sm__verify_path_confined(const char *export_dir, const char *path, char **resolved);
/* 1 when path (resolved as above) lies inside export_dir; 0 when outside; -1 when it cannot be
 * resolved (missing, unreadable). For scan and validate's reports. */
int sm__path_inside(const char *export_dir, const char *path);

/* A node that reads a file (file_ops.c): InitializeTableFromTextFile(V2), RestoreV2, Restore,
 * RestoreSlice, ReadFile, LoadAndRemapMatrix, the file datasets, ImmutableConst. */
typedef struct sm_file_op {
  const char *op, *node; /* borrowed from the MetaGraph */
  const char *function;  /* the library function holding the node; NULL: the main graph */
  char *path;            /* what it reads (malloc'ed), when the graph says it; else NULL */
  /* "const": a Const's string; "asset": an asset the loader feeds (EXPORT_DIR/assets/NAME);
   * "loader": the checkpoint prefix the loader feeds (EXPORT_DIR/variables/variables);
   * "computed": known only when it runs (a function argument, a string op) */
  const char *source;
  int inside; /* 1: inside the export; 0: outside (a load refuses it without allow_external_files);
               * -1: unknown (computed, or a relative or missing path that cannot be resolved) */
} sm_file_op;
/* Every file-reading node of mg (main graph, then each library function in order). */
sm_status *sm__file_ops(const char *export_dir, const Tensorflow__MetaGraphDef *mg, sm_file_op **out, size_t *n);
void sm__file_ops_free(sm_file_op *ops, size_t n);

/* For the restore plan (targets the restore op with these feeds): every RestoreV2 node whose
 * tensor names are a Const must name keys the bundle holds, with the dtype the op lists, and, for
 * each tensor assigned (directly or through Identity) to a variable node, the variable's declared
 * dtype and every known dimension of its shape. Returns the first disagreement; *nchecked (may be
 * NULL) counts the keys checked. */
sm_status *sm__verify_restore(const sm_cgraph *g, const char *const *feeds, int nfeeds, const char *restore_op,
                             const sm_bundle *b, int *nchecked);

#endif
