"""The zoo's serving builders: exports whose SignatureDefs carry what TF Serving's metadata API
prints beyond inputs and outputs. tf2_defaults: a tf.function whose trailing arguments have Tensor
defaults, which tf.saved_model.save records in SignatureDef.defaults (TensorProtos of several
dtypes, scalars in *_val fields and a vector in tensor_content). Besides the usual goldens it writes
OUT/<name>/metadata_signature_def.json: protobuf's json_format over the MetaGraphDef's signature
map with TF Serving's printer options (preserving_proto_field_name, every field with no presence
printed), the "signature_def" object of GET /v1/models/<name>/metadata."""

import json
import os

from zoo_common import _tf


def _write_signature_json(model_dir):
    from google.protobuf import json_format
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(model_dir, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    mg = next(m for m in sm.meta_graphs if list(m.meta_info_def.tags) == ["serve"])
    kw = {"preserving_proto_field_name": True}
    try:  # protobuf >= 5 renamed including_default_value_fields
        json_format.MessageToDict(mg.signature_def["serving_default"], always_print_fields_with_no_presence=True)
        kw["always_print_fields_with_no_presence"] = True
    except TypeError:
        kw["including_default_value_fields"] = True
    doc = {k: json.loads(json_format.MessageToJson(v, **kw)) for k, v in sorted(mg.signature_def.items())}
    with open(os.path.join(os.path.dirname(model_dir), "metadata_signature_def.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def build_tf2_defaults(model_dir):
    tf = _tf()
    import numpy as np

    class WithDefaults(tf.Module):
        @tf.function(input_signature=[
            tf.TensorSpec([None], tf.float32, name="x"),
            tf.TensorSpec([], tf.float32, name="scale"),
            tf.TensorSpec([2], tf.float64, name="bias"),
            tf.TensorSpec([], tf.int64, name="count"),
            tf.TensorSpec([], tf.int32, name="small"),
            tf.TensorSpec([], tf.bool, name="flag"),
            tf.TensorSpec([], tf.string, name="tag"),
            tf.TensorSpec([], tf.float32, name="eps")])
        def f(self, x, scale=tf.constant(2.5), bias=tf.constant([0.5, -1.25], tf.float64),
              count=tf.constant(-9007199254740993, tf.int64), small=tf.constant(-7),
              flag=tf.constant(True), tag=tf.constant(b"\xff\x00ab"), eps=tf.constant(float("nan"))):
            y = x * scale + tf.cast(tf.reduce_sum(bias), tf.float32) + tf.cast(small, tf.float32)
            y = tf.where(flag, y, -y)
            return {"y": y, "count": count + 1, "tag": tf.identity(tag), "eps": tf.identity(eps)}

    m = WithDefaults()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.f})
    _write_signature_json(model_dir)
    return {"style": "tf2",
            "description": "tf.function with Tensor default arguments, saved by tf.saved_model.save, "
                           "which records them in SignatureDef.defaults: x[?] f32 (no default), scale "
                           "f32 2.5, bias f64[2] [0.5, -1.25] (tensor_content), count int64 "
                           "-9007199254740993, small int32 -7, flag bool true, tag string "
                           "b'\\xff\\x00ab', eps f32 NaN -> y = where(flag, x*scale + sum(bias) + small, "
                           "-(...)), count + 1, tag, eps. Also metadata_signature_def.json (protobuf's "
                           "JSON of the signatures, TF Serving's printer options).",
            "inputs": {"serving_default": {"x": np.array([1.0, -2.0, 0.5], np.float32),
                                           "scale": np.float32(2.5), "bias": np.array([0.5, -1.25]),
                                           "count": np.int64(41), "small": np.int32(-7),
                                           "flag": np.bool_(False), "tag": np.array(b"\xff\x00ab", dtype=object),
                                           "eps": np.float32(0.25)}}}


SERVING_BUILDERS = {
    "tf2_defaults": build_tf2_defaults,
}
