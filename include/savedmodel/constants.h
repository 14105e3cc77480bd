/* constants.h - the names people program against, exactly as TensorFlow spells them.
 *
 * Sources: tensorflow/cc/saved_model/{constants,tag_constants,signature_constants}.h and
 * tensorflow/python/saved_model/{constants,tag_constants,signature_constants}.py. */
#ifndef SAVEDMODEL_CONSTANTS_H
#define SAVEDMODEL_CONSTANTS_H

/* ---- tag constants (tf.saved_model.SERVING, ...) ---- */
#define SM_TAG_SERVE "serve"
#define SM_TAG_TRAIN "train"
#define SM_TAG_GPU "gpu"
#define SM_TAG_TPU "tpu"
#define SM_TAG_EVAL "eval" /* Python only */

/* ---- signature constants ---- */
#define SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY "serving_default"
#define SM_PREDICT_METHOD_NAME "tensorflow/serving/predict"
#define SM_PREDICT_INPUTS "inputs"
#define SM_PREDICT_OUTPUTS "outputs"
#define SM_CLASSIFY_METHOD_NAME "tensorflow/serving/classify"
#define SM_CLASSIFY_INPUTS "inputs"
#define SM_CLASSIFY_OUTPUT_CLASSES "classes"
#define SM_CLASSIFY_OUTPUT_SCORES "scores"
#define SM_REGRESS_METHOD_NAME "tensorflow/serving/regress"
#define SM_REGRESS_INPUTS "inputs"
#define SM_REGRESS_OUTPUTS "outputs"
#define SM_DEFAULT_TRAIN_SIGNATURE_DEF_KEY "train"
#define SM_DEFAULT_EVAL_SIGNATURE_DEF_KEY "eval"
#define SM_SUPERVISED_TRAIN_METHOD_NAME "tensorflow/supervised/training"
#define SM_SUPERVISED_EVAL_METHOD_NAME "tensorflow/supervised/eval"

/* ---- file and directory names ---- */
#define SM_SAVED_MODEL_FILENAME_PB "saved_model.pb"
#define SM_SAVED_MODEL_FILENAME_PBTXT "saved_model.pbtxt"
#define SM_SAVED_MODEL_FILENAME_CPB "saved_model.cpb"
#define SM_SAVED_MODEL_FILENAME_PREFIX "saved_model"
#define SM_VARIABLES_DIRECTORY "variables"
#define SM_VARIABLES_FILENAME "variables"
#define SM_ASSETS_DIRECTORY "assets"
#define SM_EXTRA_ASSETS_DIRECTORY "assets.extra"
#define SM_DEBUG_DIRECTORY "debug"
#define SM_DEBUG_INFO_FILENAME_PB "saved_model_debug_info.pb"
#define SM_FINGERPRINT_FILENAME "fingerprint.pb"
#define SM_KERAS_METADATA_FILENAME "keras_metadata.pb"
#define SM_SERVING_CONFIG_FILENAME "saved_model_config.pb"          /* in assets.extra/ */
#define SM_SERVING_WARMUP_FILENAME "tf_serving_warmup_requests"     /* in assets.extra/ */

/* ---- collection keys and special signature keys ---- */
#define SM_ASSETS_KEY "saved_model_assets"
#define SM_MAIN_OP_KEY "saved_model_main_op"
#define SM_LEGACY_INIT_OP_KEY "legacy_init_op"
#define SM_TRAIN_OP_KEY "saved_model_train_op"
#define SM_INIT_OP_SIGNATURE_KEY "__saved_model_init_op"
#define SM_TRAIN_OP_SIGNATURE_KEY "__saved_model_train_op"
#define SM_ASSET_FILEPATHS_KEY "asset_filepaths"
#define SM_VARIABLES_COLLECTION_KEY "variables"
#define SM_TRAINABLE_VARIABLES_COLLECTION_KEY "trainable_variables"
#define SM_TABLE_INITIALIZERS_COLLECTION_KEY "table_initializer"
#define SM_OBJECT_GRAPH_PROTO_KEY "_CHECKPOINTABLE_OBJECT_GRAPH"
#define SM_ASSET_FILE_DEF_TYPE_URL "type.googleapis.com/tensorflow.AssetFileDef"

/* ---- versions ---- */
#define SM_SAVED_MODEL_SCHEMA_VERSION 1
#define SM_TENSOR_BUNDLE_VERSION 1          /* BundleHeaderProto.version.producer */
#define SM_TENSOR_BUNDLE_MIN_CONSUMER 0
#define SM_FINGERPRINT_VERSION 1

#endif
