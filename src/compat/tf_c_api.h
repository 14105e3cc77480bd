/* tf_c_api.h - the subset of TensorFlow's C API (tensorflow/c/c_api.h, tf_tensor.h, tf_status.h,
 * tf_buffer.h, tf_datatype.h, tf_tstring.h) that libsavedmodel_tf implements: our own declarations
 * with the same ABI as TensorFlow's headers, so that a program compiled against TensorFlow's
 * headers links to libsavedmodel_tf unchanged, while this library builds without TensorFlow.
 *
 * What must match TensorFlow byte for byte: the enum values (TF_Code is TSL_Code's numbering,
 * TF_DataType types.proto's), the public structs (TF_Buffer, TF_Input, TF_Output, the 24-byte
 * TF_TString union that string tensors are arrays of), and every function's signature. Everything
 * else (TF_Status, TF_Tensor, TF_Graph, TF_Operation, TF_Session, TF_SessionOptions) is opaque to
 * the caller and is defined by src/compat/. Only the TF_* names declared here are exported from
 * libsavedmodel_tf.so (src/compat/exports.map). What is covered and what is not: README,
 * "TensorFlow C API compatibility". */
#ifndef SM_COMPAT_TF_C_API_H
#define SM_COMPAT_TF_C_API_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SM_TF_API __attribute__((visibility("default")))

/* ---- tf_status.h: TSL_Code's numbering --------------------------------------------------- */
typedef enum TSL_Code {
  TF_OK = 0,
  TF_CANCELLED = 1,
  TF_UNKNOWN = 2,
  TF_INVALID_ARGUMENT = 3,
  TF_DEADLINE_EXCEEDED = 4,
  TF_NOT_FOUND = 5,
  TF_ALREADY_EXISTS = 6,
  TF_PERMISSION_DENIED = 7,
  TF_RESOURCE_EXHAUSTED = 8,
  TF_FAILED_PRECONDITION = 9,
  TF_ABORTED = 10,
  TF_OUT_OF_RANGE = 11,
  TF_UNIMPLEMENTED = 12,
  TF_INTERNAL = 13,
  TF_UNAVAILABLE = 14,
  TF_DATA_LOSS = 15,
  TF_UNAUTHENTICATED = 16
} TF_Code;

typedef struct TSL_Status TF_Status;
SM_TF_API TF_Status *TF_NewStatus(void);
SM_TF_API void TF_DeleteStatus(TF_Status *s);
SM_TF_API void TF_SetStatus(TF_Status *s, TF_Code code, const char *msg);
SM_TF_API TF_Code TF_GetCode(const TF_Status *s);
SM_TF_API const char *TF_Message(const TF_Status *s);

/* ---- tf_datatype.h: types.proto's numbers (the same as sm_dtype's) ----------------------- */
typedef enum TF_DataType {
  TF_FLOAT = 1,
  TF_DOUBLE = 2,
  TF_INT32 = 3,
  TF_UINT8 = 4,
  TF_INT16 = 5,
  TF_INT8 = 6,
  TF_STRING = 7,
  TF_COMPLEX64 = 8,
  TF_INT64 = 9,
  TF_BOOL = 10,
  TF_QINT8 = 11,
  TF_QUINT8 = 12,
  TF_QINT32 = 13,
  TF_BFLOAT16 = 14,
  TF_QINT16 = 15,
  TF_QUINT16 = 16,
  TF_UINT16 = 17,
  TF_COMPLEX128 = 18,
  TF_HALF = 19,
  TF_RESOURCE = 20,
  TF_VARIANT = 21,
  TF_UINT32 = 22,
  TF_UINT64 = 23
} TF_DataType;
SM_TF_API size_t TF_DataTypeSize(TF_DataType dt);

/* ---- tf_buffer.h -------------------------------------------------------------------------- */
typedef struct TF_Buffer {
  const void *data;
  size_t length;
  void (*data_deallocator)(void *data, size_t length);
} TF_Buffer;
SM_TF_API TF_Buffer *TF_NewBufferFromString(const void *proto, size_t proto_len);
SM_TF_API TF_Buffer *TF_NewBuffer(void);
SM_TF_API void TF_DeleteBuffer(TF_Buffer *b);
SM_TF_API TF_Buffer TF_GetBuffer(TF_Buffer *b);

/* ---- tf_tstring.h: a string tensor's element, 24 bytes; the two low bits of the first byte say
 * which member is live (little-endian hosts; sizes are stored shifted left by 2). ------------- */
typedef enum TF_TString_Type { TF_TSTR_SMALL = 0, TF_TSTR_LARGE = 1, TF_TSTR_OFFSET = 2, TF_TSTR_VIEW = 3 } TF_TString_Type;
typedef struct TF_TString {
  union {
    struct {
      uint8_t size; /* length << 2 | TF_TSTR_SMALL */
      char str[23]; /* up to 22 bytes and a NUL */
    } smll;
    struct {
      size_t size; /* length << 2 | TF_TSTR_LARGE */
      size_t cap;
      char *ptr; /* malloc'd: callers' inline code frees it with free() */
    } large;
    struct {
      uint32_t size; /* length << 2 | TF_TSTR_OFFSET */
      uint32_t offset; /* bytes from this element to its data */
      uint32_t count;
    } offset;
    struct {
      size_t size; /* length << 2 | TF_TSTR_VIEW */
      const char *ptr;
      void *owner_ref; /* TStringOwnerCApi *: {ref, unref, obj}; NULL = not owned */
    } view;
    uint8_t raw[24];
  } u;
} TF_TString;
SM_TF_API void TF_StringInit(TF_TString *t);
SM_TF_API void TF_StringCopy(TF_TString *dst, const char *src, size_t size);
SM_TF_API void TF_StringAssignView(TF_TString *dst, const char *src, size_t size);
SM_TF_API const char *TF_StringGetDataPointer(const TF_TString *t);
SM_TF_API TF_TString_Type TF_StringGetType(const TF_TString *t);
SM_TF_API size_t TF_StringGetSize(const TF_TString *t);
SM_TF_API size_t TF_StringGetCapacity(const TF_TString *t);
SM_TF_API void TF_StringDealloc(TF_TString *t);

/* ---- tf_tensor.h -------------------------------------------------------------------------- */
typedef struct TF_Tensor TF_Tensor;
SM_TF_API TF_Tensor *TF_NewTensor(TF_DataType dtype, const int64_t *dims, int num_dims, void *data, size_t len,
                                  void (*deallocator)(void *data, size_t len, void *arg), void *deallocator_arg);
SM_TF_API size_t TF_TensorDefaultAlignment(void);
SM_TF_API TF_Tensor *TF_AllocateTensor(TF_DataType dtype, const int64_t *dims, int num_dims, size_t len);
SM_TF_API TF_Tensor *TF_TensorMaybeMove(TF_Tensor *t);
SM_TF_API void TF_DeleteTensor(TF_Tensor *t);
SM_TF_API TF_DataType TF_TensorType(const TF_Tensor *t);
SM_TF_API void TF_SetShape(TF_Tensor *t, const int64_t *dims, int num_dims);
SM_TF_API int TF_NumDims(const TF_Tensor *t);
SM_TF_API int64_t TF_Dim(const TF_Tensor *t, int dim_index);
SM_TF_API size_t TF_TensorByteSize(const TF_Tensor *t);
SM_TF_API void *TF_TensorData(const TF_Tensor *t);
SM_TF_API int64_t TF_TensorElementCount(const TF_Tensor *t);
SM_TF_API _Bool TF_TensorIsAligned(const TF_Tensor *t);

/* ---- c_api.h ------------------------------------------------------------------------------ */
SM_TF_API const char *TF_Version(void);

typedef struct TF_SessionOptions TF_SessionOptions;
SM_TF_API TF_SessionOptions *TF_NewSessionOptions(void);
SM_TF_API void TF_SetTarget(TF_SessionOptions *options, const char *target);
SM_TF_API void TF_SetConfig(TF_SessionOptions *options, const void *proto, size_t proto_len, TF_Status *status);
SM_TF_API void TF_DeleteSessionOptions(TF_SessionOptions *options);

typedef struct TF_Graph TF_Graph;
typedef struct TF_Operation TF_Operation;
typedef struct TF_Input {
  TF_Operation *oper;
  int index;
} TF_Input;
typedef struct TF_Output {
  TF_Operation *oper;
  int index;
} TF_Output;

SM_TF_API TF_Graph *TF_NewGraph(void);
SM_TF_API void TF_DeleteGraph(TF_Graph *g);
SM_TF_API TF_Operation *TF_GraphOperationByName(TF_Graph *graph, const char *oper_name);
SM_TF_API TF_Operation *TF_GraphNextOperation(TF_Graph *graph, size_t *pos);
SM_TF_API void TF_GraphToGraphDef(TF_Graph *graph, TF_Buffer *output_graph_def, TF_Status *status);
SM_TF_API int TF_GraphGetTensorNumDims(TF_Graph *graph, TF_Output output, TF_Status *status);
SM_TF_API void TF_GraphGetTensorShape(TF_Graph *graph, TF_Output output, int64_t *dims, int num_dims,
                                      TF_Status *status);
SM_TF_API const char *TF_OperationName(TF_Operation *oper);
SM_TF_API const char *TF_OperationOpType(TF_Operation *oper);
SM_TF_API const char *TF_OperationDevice(TF_Operation *oper);
SM_TF_API int TF_OperationNumOutputs(TF_Operation *oper);
SM_TF_API TF_DataType TF_OperationOutputType(TF_Output oper_out);
SM_TF_API int TF_OperationNumInputs(TF_Operation *oper);
SM_TF_API TF_DataType TF_OperationInputType(TF_Input oper_in);
SM_TF_API TF_Output TF_OperationInput(TF_Input oper_in);

typedef struct TF_Session TF_Session;
SM_TF_API TF_Session *TF_LoadSessionFromSavedModel(const TF_SessionOptions *session_options,
                                                   const TF_Buffer *run_options, const char *export_dir,
                                                   const char *const *tags, int tags_len, TF_Graph *graph,
                                                   TF_Buffer *meta_graph_def, TF_Status *status);
SM_TF_API void TF_CloseSession(TF_Session *session, TF_Status *status);
SM_TF_API void TF_DeleteSession(TF_Session *session, TF_Status *status);
SM_TF_API void TF_SessionRun(TF_Session *session, const TF_Buffer *run_options, const TF_Output *inputs,
                             TF_Tensor *const *input_values, int ninputs, const TF_Output *outputs,
                             TF_Tensor **output_values, int noutputs, const TF_Operation *const *target_opers,
                             int ntargets, TF_Buffer *run_metadata, TF_Status *status);

#ifdef __cplusplus
}
#endif
#endif
