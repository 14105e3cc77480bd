/* model_internal.h - loader entry points for the library's own tools (the CLI), not public API. */
#ifndef SM_RUNTIME_MODEL_INTERNAL_H
#define SM_RUNTIME_MODEL_INTERNAL_H

#include "savedmodel/format.h"
#include "savedmodel/model.h"

/* sm_model_load on a SavedModel the caller already read from export_dir (sm_saved_model_read),
 * so that a tool that inspects it first (`savedmodel run` checks the signature and inputs before
 * loading, as saved_model_cli does) does not read and parse saved_model.pb twice. Takes ownership
 * of sm whatever the outcome; sm NULL reads it, as sm_model_load does. */
sm_status *sm__model_load_parsed(const char *export_dir, Tensorflow__SavedModel *sm, const char *const *tags,
                                 int ntags, const sm_load_options *opts, sm_model **out);

#endif
