/* savedmodel.h - the umbrella header: every public header of libsavedmodel in one include.
 *
 *   #include <savedmodel/savedmodel.h>
 *
 * Each header below also stands alone (include just the ones you use if you prefer). A new public
 * header must be listed here: test_umbrella fails when one is missing. */
#ifndef SM_SAVEDMODEL_H
#define SM_SAVEDMODEL_H

#include "savedmodel/api.h"           /* SM_API: what the shared library exports */
#include "savedmodel/status.h"        /* sm_status: errors */
#include "savedmodel/version.h"       /* sm_version() */
#include "savedmodel/dtype.h"         /* DataType numbers and facts */
#include "savedmodel/tensor.h"        /* sm_tensor */
#include "savedmodel/constants.h"     /* tag, signature and file names */
#include "savedmodel/format.h"        /* saved_model.pb / .pbtxt read and write */
#include "savedmodel/pbtxt.h"         /* protobuf text format */
#include "savedmodel/bundle.h"        /* variables/ checkpoint bundles */
#include "savedmodel/npy.h"           /* .npy / .npz */
#include "savedmodel/idx.h"           /* MNIST-format IDX files */
#include "savedmodel/example.h"       /* tf.train.Example */
#include "savedmodel/graph_builder.h" /* GraphDef construction */
#include "savedmodel/builder.h"       /* writing SavedModels */
#include "savedmodel/model.h"         /* load and run */
#include "savedmodel/train.h"         /* training Sequential models */

#endif
