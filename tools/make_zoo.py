#!/usr/bin/env python3
"""Writes the zoo: small SavedModels exported by real TensorFlow, plus goldens recorded with TensorFlow.

Usage: make_zoo.py --out tests/fixtures/zoo [--only NAME ...] [--jobs N]

Each model lands in OUT/<name>/model/ (the SavedModel) and its goldens in OUT/<name>/golden/:
  show_dir.txt, show_tagset_<T>.txt, show_sig_<T>_<K>.txt, show_all.txt  stdout of `saved_model_cli show`
  vars.json, vars/<key>.npy         every bundle entry read back with tf.train.load_checkpoint
  outputs/<T>__<K>/{inputs,outputs}/<alias>.{npy,json}  signature results on fixed inputs
OUT/MANIFEST.json describes every model. Each model is built in its own Python process, so that
TensorFlow's global name counters (function and layer names) do not depend on which models ran before.
The C tests read only what this writes, so they never need TensorFlow.
"""

import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SEED = 1234
# Tensors with more elements than this keep only their .npy and sha256 in vars.json (keeps the zoo small).
JSON_VALUE_LIMIT = 4096


# --------------------------------------------------------------------------------------------------
# Model builders. Each runs in a fresh process, writes the SavedModel into `model_dir` and returns
# {"style", "description", "inputs": {sig_key: {alias: ndarray}} (optional, overrides the defaults)}.
# --------------------------------------------------------------------------------------------------

def _tf():
    import tensorflow as tf
    return tf


def build_tf1_square(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, name="x")  # no shape: unknown rank, as in the seed
        y = tf.square(x, name="y")
        sig = v1.saved_model.build_signature_def(
            inputs={"x": v1.saved_model.build_tensor_info(x)},
            outputs={"y": v1.saved_model.build_tensor_info(y)},
            method_name=v1.saved_model.PREDICT_METHOD_NAME)
        b = v1.saved_model.Builder(model_dir)
        b.add_meta_graph_and_variables(sess, [v1.saved_model.SERVING],
                                       signature_def_map={"serving_default": sig})
        b.save()
    return {"style": "tf1",
            "description": "TF1 graph: y = square(x), x float32 placeholder of unknown rank, no "
                           "variables; tags [serve]; predict signature serving_default x -> y."}


def build_tf1_pbtxt(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, shape=[None], name="x")
        a = v1.Variable(0.5, name="a")
        b_ = v1.Variable(2.0, name="b")
        y = tf.add(tf.multiply(a, x), b_, name="y")
        sess.run(v1.global_variables_initializer())
        sig = v1.saved_model.predict_signature_def(inputs={"x": x}, outputs={"y": y})
        b = v1.saved_model.Builder(model_dir)
        b.add_meta_graph_and_variables(sess, [v1.saved_model.SERVING],
                                       signature_def_map={"serving_default": sig})
        b.save(as_text=True)
    return {"style": "tf1",
            "description": "TF1 graph y = a*x + b (a=0.5, b=2.0 variables), saved as text "
                           "(saved_model.pbtxt); tags [serve]."}


def build_tf1_multi_tags(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, shape=[None, 3], name="x")
        w = v1.Variable([[1.0], [2.0], [3.0]], name="w")
        bias = v1.Variable([0.25], name="bias")
        y = tf.add(tf.matmul(x, w), bias, name="y")
        sess.run(v1.global_variables_initializer())
        b = S.Builder(model_dir)
        b.add_meta_graph_and_variables(
            sess, [S.SERVING],
            signature_def_map={"serving_default": S.predict_signature_def({"x": x}, {"y": y})})
        # Same variables, another graph view: extra outputs for the "gpu" tag set.
        relu = tf.nn.relu(y, name="y_relu")
        b.add_meta_graph([S.SERVING, S.GPU], signature_def_map={
            "serving_default": S.predict_signature_def({"x": x}, {"y": y, "y_relu": relu}),
            "relu_only": S.predict_signature_def({"x": x}, {"out": relu})})
        # Training view: a loss and an SGD step.
        label = v1.placeholder(tf.float32, shape=[None, 1], name="label")
        loss = tf.reduce_mean(tf.square(y - label), name="loss")
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        # The train op rides in the graph (and the train_op collection) of the [train] MetaGraph.
        v1.add_to_collection("train_op", train_op)
        b.add_meta_graph([S.TRAINING], signature_def_map={
            "loss": S.build_signature_def(
                inputs={"x": S.build_tensor_info(x), "label": S.build_tensor_info(label)},
                outputs={"loss": S.build_tensor_info(loss)},
                method_name=S.PREDICT_METHOD_NAME)})
        b.save()
    return {"style": "tf1",
            "description": "One TF1 export, three MetaGraphs sharing variables w[3,1], bias[1]: "
                           "[serve] (serving_default x->y), [serve,gpu] (serving_default x->y,y_relu; "
                           "relu_only x->out), [train] (loss x,label->loss)."}


LABELS = ["cat", "dog", "bird"]


def build_tf1_labels(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    # Build from inside a scratch dir with a relative vocabulary path, so that the graph's asset
    # constant reads "labels.txt" and not a machine-specific temporary path.
    model_dir = os.path.abspath(model_dir)
    tmp = tempfile.mkdtemp(prefix="zoo_labels_")
    old_cwd = os.getcwd()
    os.chdir(tmp)
    labels_path = "labels.txt"
    with open(labels_path, "w") as f:
        f.write("\n".join(LABELS) + "\n")
    with tf.Graph().as_default(), v1.Session() as sess:
        v1.set_random_seed(SEED)
        w = v1.Variable([[1.0, -1.0, 0.5], [0.5, 2.0, -1.0], [-0.5, 0.25, 1.5], [0.0, 1.0, 1.0]],
                        name="w")
        bias = v1.Variable([0.1, 0.0, -0.1], name="bias")
        table = v1.lookup.StaticHashTable(
            v1.lookup.TextFileInitializer(labels_path, tf.int64,
                                          v1.lookup.TextFileIndex.LINE_NUMBER,
                                          tf.string, v1.lookup.TextFileIndex.WHOLE_LINE),
            default_value="UNKNOWN", name="label_table")
        asset = tf.constant(labels_path, name="labels_asset")
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, asset)

        def head(xf):
            scores = tf.nn.softmax(tf.matmul(xf, w) + bias)
            n = tf.shape(xf)[0]
            ids = tf.tile(tf.expand_dims(tf.range(len(LABELS), dtype=tf.int64), 0), [n, 1])
            return table.lookup(ids), scores

        examples = v1.placeholder(tf.string, shape=[None], name="tf_example")
        feats = v1.io.parse_example(examples, {"x": v1.io.FixedLenFeature([4], tf.float32)})
        classes_c, scores_c = head(feats["x"])
        x = v1.placeholder(tf.float32, shape=[None, 4], name="x")
        classes_p, scores_p = head(x)
        sess.run(v1.global_variables_initializer())
        sess.run(v1.tables_initializer())
        b = S.Builder(model_dir)
        b.add_meta_graph_and_variables(
            sess, [S.SERVING],
            signature_def_map={
                "serving_default": S.classification_signature_def(examples, classes_c, scores_c),
                "predict": S.predict_signature_def({"x": x}, {"classes": classes_p, "scores": scores_p}),
            },
            assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
            main_op=v1.tables_initializer())
        b.save()
    os.chdir(old_cwd)
    shutil.rmtree(tmp)
    rng = _rng()
    xs = rng.standard_normal((2, 4)).astype("float32")
    ex = [_tf_example(tf, {"x": row}) for row in xs]
    import numpy as np
    return {"style": "tf1",
            "description": "TF1 classifier with a label vocabulary asset assets/labels.txt "
                           "(cat, dog, bird) in a StaticHashTable(TextFileInitializer); "
                           "main_op = tables_initializer; serving_default = classify signature "
                           "(inputs: serialized tf.Example with float feature x[4] -> classes, scores); "
                           "predict signature x[?,4] -> classes, scores.",
            "inputs": {"serving_default": {"inputs": np.array(ex, dtype=object)},
                       "predict": {"x": xs}}}


def _tf_example(tf, feats):
    fmap = {k: tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in vals]))
            for k, vals in feats.items()}
    return tf.train.Example(features=tf.train.Features(feature=fmap)).SerializeToString()


def _cnn():
    import keras
    keras.utils.set_random_seed(SEED)
    return keras.Sequential([
        keras.Input(shape=(8, 8, 1), name="image"),
        keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
        keras.layers.MaxPooling2D(2, name="pool"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(8, activation="relu", name="hidden"),
        keras.layers.Dense(3, name="logits"),
    ], name="cnn")


def build_tf2_keras_cnn(model_dir):
    tf = _tf()
    model = _cnn()
    model(tf.zeros([1, 8, 8, 1]))
    tf.saved_model.save(model, model_dir)
    return {"style": "tf2",
            "description": "Keras (%s) CNN on 8x8x1: Conv2D(4,3,relu), MaxPooling2D(2), Flatten, "
                           "Dense(8,relu), Dense(3), saved with tf.saved_model.save(model, dir)."
                           % _keras_version()}


def build_keras3_export(model_dir):
    model = _cnn()
    import numpy as np
    model(np.zeros([1, 8, 8, 1], "float32"))
    model.export(model_dir)  # format="tf_saved_model"
    return {"style": "keras3",
            "description": "The same Keras CNN exported with Keras %s model.export(dir) "
                           "(endpoints serve and serving_default)." % _keras_version()}


def _keras_version():
    import keras
    return keras.__version__


def build_tf2_module(model_dir):
    tf = _tf()

    class Affine(tf.Module):
        def __init__(self):
            super().__init__(name="affine")
            self.w = tf.Variable([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0]], name="w")
            self.b = tf.Variable([0.5, -0.5], name="b")
            self.calls = tf.Variable(7, dtype=tf.int64, name="calls")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def predict(self, x):
            return {"y": tf.matmul(x, self.w) + self.b}

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x"),
                                      tf.TensorSpec([], tf.float32, name="factor")])
        def scale(self, x, factor):
            y = (tf.matmul(x, self.w) + self.b) * factor
            return {"scaled": y, "norm": tf.norm(y, axis=1)}

    m = Affine()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.predict,
                                                  "scale": m.scale})
    return {"style": "tf2",
            "description": "tf.Module with variables w[3,2], b[2], calls (int64 scalar); signatures "
                           "serving_default (x[?,3] -> y) and scale (x, factor -> scaled, norm)."}


def build_all_dtypes(model_dir):
    tf = _tf()
    import numpy as np
    rng = _rng()
    bf16 = tf.bfloat16.as_numpy_dtype
    values = {
        "f32": np.array([[1.5, -2.25, 0.0], [np.pi, -0.0, 1e-30]], np.float32),
        "f32_scalar": np.float32(42.5),
        "f32_empty": np.zeros([0], np.float32),
        "f32_empty_2d": np.zeros([3, 0], np.float32),
        "f32_special": np.array([np.inf, -np.inf, 3.4028235e38, 1.4e-45], np.float32),
        "f64": np.array([1.0 / 3.0, -1e300, 2.5e-310], np.float64),
        "f16": np.array([[0.5, -1.0], [65504.0, 6.1e-5]], np.float16),
        "bf16": np.array([1.0, -2.5, 3.140625, 1e30], dtype=bf16),
        "i8": np.array([-128, -1, 0, 127], np.int8),
        "i16": np.array([-32768, 12345, 32767], np.int16),
        "i32": np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 12,
        "i32_scalar": np.int32(-7),
        "i64": np.array([-(2 ** 63), 2 ** 63 - 1, 0, 1 << 40], np.int64),
        "u8": np.array([0, 1, 254, 255], np.uint8),
        "u16": np.array([0, 65535, 4660], np.uint16),
        "u32": np.array([0, 4294967295, 305419896], np.uint32),
        "u64": np.array([0, 2 ** 64 - 1, 81985529216486895], np.uint64),
        "bool": np.array([[True, False, True], [False, False, True]], np.bool_),
        "bool_scalar": np.bool_(True),
        "c64": np.array([1 + 2j, -3.5 - 0.25j], np.complex64),
        "c128": np.array([[1e-300 + 1j], [-1 - 1e300j]], np.complex128),
        "str": np.array([b"", b"hello", b"a\x00b", b"\x00", b"\xff\xfe\x00\x01", b"x" * 300],
                        dtype=object),
        "str_scalar": np.array(b"scalar\x00string", dtype=object),
        "str_2d": np.array([[b"a", b""], [b"", b"\x00\x00"]], dtype=object),
        "str_empty": np.array([], dtype=object).reshape(0, 2),
        "big_f32": rng.standard_normal((300, 300)).astype(np.float32),
    }
    dtypes = {"str": tf.string, "str_scalar": tf.string, "str_2d": tf.string,
              "str_empty": tf.string, "bf16": tf.bfloat16}

    class Holder(tf.Module):
        def __init__(self):
            super().__init__(name="holder")
            for k, v in values.items():
                setattr(self, k, tf.Variable(tf.constant(v, dtype=dtypes.get(k)), name=k))

        @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32, name="x")])
        def add_f32(self, x):
            return {"sum": x + self.f32, "count": tf.size(self.str)}

    m = Holder()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.add_f32})
    return {"style": "tf2",
            "description": "tf.Module holding tf.Variables of every checkpointable dtype (float32, "
                           "float64, float16, bfloat16, int8..int64, uint8..uint64, bool, complex64, "
                           "complex128, string with NUL bytes and empty strings), scalars, 0-element, "
                           "multi-dim and a 300x300 float32; signature serving_default "
                           "(x[2,3] -> sum = x + f32, count = size(str))."}


def build_tf1_partitioned(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, shape=[None, 7], name="x")
        def sliced(full):
            # Partitioned variables call the initializer once per part, with the part's shape and
            # its offset in the full variable: hand each part its slice of `full`.
            def init(shape, dtype=None, partition_info=None):
                off = partition_info.var_offset if partition_info else [0] * len(shape)
                idx = tuple(slice(o, o + n) for o, n in zip(off, shape))
                return tf.constant(full[idx], dtype=dtype)
            return init

        w = v1.get_variable("w", shape=[7, 4],
                            initializer=sliced(np.arange(28, dtype=np.float32).reshape(7, 4) / 10.0),
                            partitioner=v1.fixed_size_partitioner(3))
        emb = v1.get_variable("emb", shape=[5, 2], dtype=tf.float32,
                              initializer=sliced(np.arange(10, dtype=np.float32).reshape(5, 2)),
                              partitioner=v1.fixed_size_partitioner(2, axis=1))
        plain = v1.get_variable("plain", shape=[4], initializer=v1.ones_initializer())
        y = tf.add(tf.matmul(x, tf.convert_to_tensor(w)), plain, name="y")
        z = tf.reduce_sum(tf.convert_to_tensor(emb), name="z")
        sess.run(v1.global_variables_initializer())
        b = S.Builder(model_dir)
        b.add_meta_graph_and_variables(sess, [S.SERVING], signature_def_map={
            "serving_default": S.predict_signature_def({"x": x}, {"y": y, "emb_sum": z})})
        b.save()
    return {"style": "tf1",
            "description": "TF1 graph with partitioned variables: w[7,4] split in 3 along axis 0 "
                           "(fixed_size_partitioner(3)), emb[5,2] split in 2 along axis 1, plus plain[4]. "
                           "The bundle holds full-variable entries with slices and per-slice entries."}


def build_tf1_sharded(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    with tf.Graph().as_default(), \
            v1.Session(config=v1.ConfigProto(device_count={"CPU": 2})) as sess:
        x = v1.placeholder(tf.float32, shape=[None, 2], name="x")
        with tf.device("/cpu:0"):
            w0 = v1.Variable([[1.0, 2.0], [3.0, 4.0]], name="w0")
        with tf.device("/cpu:1"):
            w1 = v1.Variable([10.0, 20.0], name="w1")
            steps = v1.Variable(3, dtype=tf.int64, name="steps")
        y = tf.add(tf.matmul(x, w0), w1, name="y")
        sess.run(v1.global_variables_initializer())
        b = S.Builder(model_dir)
        # The sharded saver splits by device when it is built; clear_devices then strips the devices
        # from the exported graph so that the model loads on one CPU.
        b.add_meta_graph_and_variables(sess, [S.SERVING], clear_devices=True, signature_def_map={
            "serving_default": S.predict_signature_def({"x": x}, {"y": y})})
        b.save()
    return {"style": "tf1",
            "description": "TF1 graph whose variables were placed on /cpu:0 (w0) and /cpu:1 (w1, steps): "
                           "the sharded saver writes variables.data-0000{0,1}-of-00002."}


BUILDERS = {
    "tf1_square": build_tf1_square,
    "tf1_pbtxt": build_tf1_pbtxt,
    "tf1_multi_tags": build_tf1_multi_tags,
    "tf1_labels": build_tf1_labels,
    "tf2_keras_cnn": build_tf2_keras_cnn,
    "keras3_export": build_keras3_export,
    "tf2_module": build_tf2_module,
    "all_dtypes": build_all_dtypes,
    "tf1_partitioned": build_tf1_partitioned,
    "tf1_sharded": build_tf1_sharded,
}


def _rng(seed=SEED):
    import numpy as np
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------------------
# Goldens
# --------------------------------------------------------------------------------------------------

def sanitize(s):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", s)


def _json_scalar(v, kind):
    import numpy as np
    if kind == "string":
        return base64.b64encode(bytes(v)).decode("ascii")
    if kind == "complex":
        return [_json_scalar(v.real, "float"), _json_scalar(v.imag, "float")]
    if kind == "float":
        f = float(v)
        if np.isnan(f):
            return "NaN"
        if np.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if kind == "bool":
        return bool(v)
    return int(v)


def _kind(tf_dtype):
    if tf_dtype == _tf().string:
        return "string"
    if tf_dtype.is_complex:
        return "complex"
    if tf_dtype.is_floating:
        return "float"
    if tf_dtype.is_bool:
        return "bool"
    return "int"


def _nested(arr, kind):
    if arr.ndim == 0:
        return _json_scalar(arr[()], kind)
    if arr.ndim == 1:
        return [_json_scalar(v, kind) for v in arr]
    return [_nested(arr[i], kind) for i in range(arr.shape[0])]


def save_array(arr, tf_dtype, path_noext):
    """Writes a tensor as .npy (numeric; bfloat16 as its raw uint16 bits) or .json (strings).

    Returns (file name, extra fields for the JSON description)."""
    import numpy as np
    tf = _tf()
    arr = np.asarray(arr)
    if tf_dtype == tf.string:
        doc = {"dtype": "DT_STRING", "shape": list(arr.shape), "encoding": "base64",
               "value": _nested(arr, "string")}
        with open(path_noext + ".json", "w") as f:
            json.dump(doc, f)
            f.write("\n")
        return os.path.basename(path_noext) + ".json", {}
    extra = {}
    if tf_dtype == tf.bfloat16:
        arr = arr.view(np.uint16)
        extra["npy_note"] = "raw bfloat16 bits stored as uint16"
    # Not np.ascontiguousarray: it turns a 0-d array into shape (1,).
    arr = np.array(arr.astype(arr.dtype.newbyteorder("<")), order="C")
    np.save(path_noext + ".npy", arr, allow_pickle=False)
    extra["sha256_le"] = hashlib.sha256(arr.tobytes()).hexdigest()
    return os.path.basename(path_noext) + ".npy", extra


def dtype_name(tf_dtype):
    from tensorflow.core.framework import types_pb2
    return types_pb2.DataType.Name(tf_dtype.as_datatype_enum)


def record_vars(model_dir, golden):
    tf = _tf()
    import numpy as np
    prefix = os.path.join(model_dir, "variables", "variables")
    out = []
    if not os.path.exists(prefix + ".index"):
        # No checkpoint at all (e.g. a graph without variables: TF leaves variables/ empty).
        with open(os.path.join(golden, "vars.json"), "w") as f:
            f.write("[]\n")
        return out
    reader = tf.train.load_checkpoint(prefix)
    dmap = reader.get_variable_to_dtype_map()
    smap = reader.get_variable_to_shape_map()
    vdir = os.path.join(golden, "vars")
    os.makedirs(vdir, exist_ok=True)
    for key in sorted(dmap):
        dt = dmap[key]
        if dt == tf.string:
            # The checkpoint reader hands strings back as fixed-width numpy bytes, which drops
            # trailing NULs; RestoreV2 returns the exact bytes.
            val = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[key], shape_and_slices=[""],
                                       dtypes=[tf.string])[0].numpy()
            val = np.asarray(val, dtype=object)
        else:
            val = np.asarray(reader.get_tensor(key))
        kind = _kind(dt)
        fname, extra = save_array(val, dt, os.path.join(vdir, sanitize(key)))
        e = {"key": key, "dtype": dtype_name(dt), "shape": [int(d) for d in smap[key]],
             "file": "vars/" + fname}
        if kind == "string":
            e["encoding"] = "base64"
        if val.size <= JSON_VALUE_LIMIT:
            e["value"] = _nested(val, kind)
        else:
            e["value"] = None
            e["value_omitted"] = "more than %d elements; see file" % JSON_VALUE_LIMIT
        e.update(extra)
        out.append(e)
    with open(os.path.join(golden, "vars.json"), "w") as f:
        # One entry per line: readable diffs without one line per element.
        f.write("[\n" + ",\n".join(json.dumps(e) for e in out) + "\n]\n")
    return out


def meta_graphs(model_dir):
    from tensorflow.python.saved_model import loader_impl
    sm = loader_impl.parse_saved_model(model_dir)
    return list(sm.meta_graphs)


def default_input(info, rng):
    import numpy as np
    tf = _tf()
    dt = tf.as_dtype(info.dtype)
    if info.tensor_shape.unknown_rank:
        shape = [2, 3]
    else:
        shape = [d.size if d.size >= 0 else 2 for d in info.tensor_shape.dim]
    if dt.is_floating:
        return rng.standard_normal(shape).astype(dt.as_numpy_dtype)
    if dt.is_integer:
        return rng.integers(0, 10, shape).astype(dt.as_numpy_dtype)
    if dt.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    raise ValueError("no default input for dtype %s" % dt)


def record_outputs(model_dir, golden, style, custom):
    """Runs every signature on fixed inputs and writes inputs/outputs under golden/outputs/."""
    import numpy as np
    tf = _tf()
    results = {}
    for mg in meta_graphs(model_dir):
        tags = list(mg.meta_info_def.tags)
        tagname = sanitize(",".join(tags)).replace(",", "_")
        for key in sorted(mg.signature_def):
            sig = mg.signature_def[key]
            if key.startswith("__") or not sig.outputs:
                continue
            rng = _rng(SEED + len(results))
            feeds = {}
            for alias in sorted(sig.inputs):
                v = custom.get(key, {}).get(alias)
                feeds[alias] = v if v is not None else default_input(sig.inputs[alias], rng)
            if style == "tf1":
                outs = _run_tf1(model_dir, tags, sig, feeds)
            else:
                outs = _run_tf2(model_dir, key, feeds)
            d = os.path.join(golden, "outputs", "%s__%s" % (tagname, sanitize(key)))
            entry = {"tags": tags, "signature": key, "inputs": {}, "outputs": {}}
            for sub, tensors, infos in (("inputs", feeds, sig.inputs), ("outputs", outs, sig.outputs)):
                os.makedirs(os.path.join(d, sub), exist_ok=True)
                for alias, val in sorted(tensors.items()):
                    dt = tf.as_dtype(infos[alias].dtype)
                    fname, extra = save_array(val, dt, os.path.join(d, sub, sanitize(alias)))
                    entry[sub][alias] = dict({"dtype": dtype_name(dt),
                                              "shape": list(np.asarray(val).shape),
                                              "file": "%s/%s" % (sub, fname)}, **extra)
            with open(os.path.join(d, "signature.json"), "w") as f:
                json.dump(entry, f, indent=1)
                f.write("\n")
            results["%s__%s" % (tagname, key)] = entry
    return results


def _run_tf1(model_dir, tags, sig, feeds):
    tf = _tf()
    v1 = tf.compat.v1
    cfg = v1.ConfigProto(allow_soft_placement=True)
    with tf.Graph().as_default(), v1.Session(config=cfg) as sess:
        v1.saved_model.loader.load(sess, tags, model_dir)
        feed = {sig.inputs[a].name: v for a, v in feeds.items()}
        aliases = sorted(sig.outputs)
        vals = sess.run([sig.outputs[a].name for a in aliases], feed_dict=feed)
        return dict(zip(aliases, vals))


_LOADED = {}


def _run_tf2(model_dir, key, feeds):
    tf = _tf()
    if model_dir not in _LOADED:
        _LOADED[model_dir] = tf.saved_model.load(model_dir)
    fn = _LOADED[model_dir].signatures[key]
    out = fn(**{a: tf.constant(v) for a, v in feeds.items()})
    return {a: t.numpy() for a, t in out.items()}


def cli_command():
    exe = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if os.path.exists(exe):
        return [exe]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def _cli_in_process(args, cwd):
    """Runs saved_model_cli's own main() in this process (what the saved_model_cli console script
    calls), with file descriptor 1 redirected, and returns (stdout bytes, exit code). Importing
    TensorFlow once per model instead of once per command keeps the zoo quick to regenerate."""
    from absl import flags
    from tensorflow.python.tools import saved_model_cli
    flags.FLAGS.unparse_flags()
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.stdout.flush()
    saved_fd = os.dup(1)
    with tempfile.TemporaryFile() as cap:
        os.dup2(cap.fileno(), 1)
        rc = 0
        try:
            sys.argv = ["saved_model_cli"] + args
            os.chdir(cwd)
            saved_model_cli.main()
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finally:
            sys.stdout.flush()
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
            sys.argv = old_argv
            os.chdir(old_cwd)
        cap.seek(0)
        return cap.read(), rc


def record_cli(model_root, golden, subprocesses):
    """Runs `saved_model_cli show` as a user would, from OUT/<name> with --dir model, keeping stdout."""
    jobs = [("show_dir.txt", []), ("show_all.txt", ["--all"])]
    for mg in meta_graphs(os.path.join(model_root, "model")):
        t = ",".join(mg.meta_info_def.tags)
        tn = sanitize(t.replace(",", "_"))
        jobs.append(("show_tagset_%s.txt" % tn, ["--tag_set", t]))
        for key in sorted(mg.signature_def):
            jobs.append(("show_sig_%s_%s.txt" % (tn, sanitize(key)),
                         ["--tag_set", t, "--signature_def", key]))
    env = dict(os.environ, PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    done = []
    for name, args in jobs:
        argv = ["show", "--dir", "model"] + args
        if subprocesses:
            p = subprocess.run(cli_command() + argv, cwd=model_root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, rc = p.stdout, p.returncode
        else:
            out, rc = _cli_in_process(argv, model_root)
        with open(os.path.join(golden, name), "wb") as f:
            f.write(out)
        done.append({"file": name, "args": argv, "rc": rc})
    return done


def build_one(name, out, cli_subprocess=False):
    """Builds model `name` under out/name and records its goldens; prints its manifest entry as JSON."""
    import numpy as np
    tf = _tf()
    np.random.seed(SEED)
    tf.random.set_seed(SEED)
    root = os.path.join(out, name)
    shutil.rmtree(root, ignore_errors=True)
    model_dir = os.path.join(root, "model")
    golden = os.path.join(root, "golden")
    info = BUILDERS[name](model_dir)
    os.makedirs(golden, exist_ok=True)
    varlist = record_vars(model_dir, golden)
    outputs = record_outputs(model_dir, golden, info["style"], info.get("inputs", {}))
    cli = record_cli(root, golden, cli_subprocess)
    mgs = meta_graphs(model_dir)
    entry = {
        "name": name,
        "style": info["style"],
        "description": info["description"],
        "tensorflow_version": tf.__version__,
        "saved_model_file": "saved_model.pbtxt" if os.path.exists(
            os.path.join(model_dir, "saved_model.pbtxt")) else "saved_model.pb",
        "tag_sets": [list(m.meta_info_def.tags) for m in mgs],
        "signatures": {",".join(m.meta_info_def.tags): sorted(m.signature_def) for m in mgs},
        "variables": len(varlist),
        "outputs": sorted(outputs),
        "cli": cli,
    }
    if info["style"] != "tf1":
        entry["keras_version"] = _keras_version()
    with open(os.path.join(root, "entry.json.tmp"), "w") as f:
        json.dump(entry, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="build only these models")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--cli-subprocess", action="store_true",
                    help="run saved_model_cli as a separate process per command (slow; the default "
                         "calls its main() inside the model's process)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: build one model in this process
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if a.one:
        build_one(a.one, out, a.cli_subprocess)
        return 0
    names = a.only or list(BUILDERS)
    for n in names:
        if n not in BUILDERS:
            ap.error("unknown model %s (have: %s)" % (n, ", ".join(BUILDERS)))
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="",
               TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))

    def run(n):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--out", out, "--one", n]
                           + (["--cli-subprocess"] if a.cli_subprocess else []),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return n, p.returncode, p.stdout.decode("utf-8", "replace")

    failed = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for n, rc, log in ex.map(run, names):
            print("zoo: %-16s %s" % (n, "ok" if rc == 0 else "FAILED"))
            if rc != 0:
                failed.append(n)
                sys.stdout.write(log[-6000:])
    manifest_path = os.path.join(out, "MANIFEST.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = {m["name"]: m for m in json.load(f)["models"]}
    for n in names:
        tmp = os.path.join(out, n, "entry.json.tmp")
        if os.path.exists(tmp):
            with open(tmp) as f:
                manifest[n] = json.load(f)
            os.remove(tmp)
    versions = sorted({m["tensorflow_version"] for m in manifest.values()})
    doc = {"generator": "tools/make_zoo.py", "tensorflow_version": ", ".join(versions),
           "layout": {"model": "<name>/model: the SavedModel as TensorFlow wrote it",
                      "golden": "<name>/golden: saved_model_cli stdout, vars.json + vars/*.npy, "
                                "outputs/<tags>__<signature>/{inputs,outputs}"},
           "models": [manifest[k] for k in BUILDERS if k in manifest]}
    with open(manifest_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
