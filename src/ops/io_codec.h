/* io_codec.h - the TensorProto bytes io_codec.c writes for SerializeTensor, shared with the
 * sparse serializers (sparse_ser.c): TensorFlow's AsProtoField / AsProtoTensorContent + SerializeAsString. */
#ifndef SM_OPS_IO_CODEC_H
#define SM_OPS_IO_CODEC_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/tensor.h"

/* Writes t's TensorProto into out (which holds the size a NULL out returns); returns the bytes.
 * t is neither a variant nor a resource tensor. as_content: strings as TF's AsProtoTensorContent
 * writes them (tensor_content), else as AsProtoField (string_val; SerializeTensor). */
size_t sm__tensor_proto_encode(const sm_tensor *t, int as_content, uint8_t *out);

#endif
