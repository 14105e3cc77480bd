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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_common import SEED, _how_text, _keras, _keras_out, _keras_version, _rng, _set_bn, _tf, _v1_builder_save  # noqa: F401
from zoo_control import CONTROL_BUILDERS
from zoo_fold import FOLD_BUILDERS
from zoo_residual import RESIDUAL_BUILDERS
from zoo_control2 import CONTROL2_BUILDERS
from zoo_keras import KERAS_BUILDERS
from zoo_augment import AUGMENT_BUILDERS
from zoo_serving import SERVING_BUILDERS
from zoo_text import TEXT_BUILDERS
from zoo_transformer import TRANSFORMER_BUILDERS
from zoo_layers import LAYER_BUILDERS

# Tensors with more elements than this keep only their .npy and sha256 in vars.json (keeps the zoo small).
JSON_VALUE_LIMIT = 4096


# --------------------------------------------------------------------------------------------------
# Model builders. Each runs in a fresh process, writes the SavedModel into `model_dir` and returns
# {"style", "description", "inputs": {sig_key: {alias: ndarray}} (optional, overrides the defaults)}.
# TF1/TF2 format builders are here; Keras layer builders in zoo_keras.py; control flow and recurrent
# ones (TF2 While/If/Case, Keras RNNs, TF1 frames and TensorArrays) in zoo_control.py.
# --------------------------------------------------------------------------------------------------

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
                       "predict": {"x": xs}},
            "batch_inputs": lambda key, alias, n, rng: np.array(
                [_tf_example(tf, {"x": row}) for row in rng.standard_normal((n, 4)).astype("float32")],
                dtype=object) if alias == "inputs" else None}


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


# ---- Session 2 (issue #4 item 6): models that exercise the runtime, layer by layer ----------------
# Small layer sizes keep each model a few tens of KB; keras_seed_cnn is the seed's CNN at full size.

def _dense_tf1(tf, use_resource, model_dir):
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    rng = _rng()
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, shape=[None, 4], name="x")
        w1 = v1.Variable(rng.standard_normal((4, 5)).astype(np.float32), name="w1",
                         use_resource=use_resource)
        b1 = v1.Variable(rng.standard_normal(5).astype(np.float32), name="b1", use_resource=use_resource)
        w2 = v1.Variable(rng.standard_normal((5, 2)).astype(np.float32), name="w2",
                         use_resource=use_resource)
        h = tf.nn.relu(tf.matmul(x, w1) + b1, name="hidden")
        logits = tf.add(tf.matmul(h, w2), 0.5, name="logits")
        probs = tf.nn.softmax(logits, name="probs")
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"x": x}, {"logits": logits, "probs": probs}),
            "hidden": S.predict_signature_def({"x": x}, {"hidden": h})})


def build_tf1_ref_vars(model_dir):
    _dense_tf1(_tf(), False, model_dir)
    return {"style": "tf1",
            "description": "TF1 two-layer MLP with ref variables (VariableV2, use_resource=False): "
                           "x[?,4] -> relu(x w1 + b1) w2 + 0.5 -> logits, softmax probs; signatures "
                           "serving_default (logits, probs) and hidden."}


def build_tf1_resource_vars(model_dir):
    _dense_tf1(_tf(), True, model_dir)
    return {"style": "tf1",
            "description": "The same TF1 MLP as tf1_ref_vars with resource variables (VarHandleOp, "
                           "ReadVariableOp, AssignVariableOp in the restore path)."}


def _examples(tf, rng, n, with_y=True):
    """n serialized tf.Example protos: float feature x[2], int64 feature y[1] on every other one
    (the others take the default). No proto ends in a NUL byte (.npy 'S' arrays strip them)."""
    import numpy as np
    out = []
    for i in range(n):
        xs = rng.uniform(0.5, 3.0, 2).astype(np.float32)
        feats = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in xs]))}
        if with_y and i % 2 == 0:
            feats["y"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[i + 3]))
        ex = tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString(
            deterministic=True)
        assert not ex.endswith(b"\0")
        out.append(ex)
    return np.array(out, dtype=object)


def build_tf1_classify_regress(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        w = v1.Variable([[0.5, -1.0], [2.0, 0.25]], name="w", use_resource=False)
        b = v1.Variable([0.1, -0.2], name="b", use_resource=False)
        serialized = v1.placeholder(tf.string, shape=[None], name="tf_example")
        # regress: the V1 ParseExample op, called directly.
        parsed = tf.raw_ops.ParseExample(
            serialized=serialized, names=tf.constant([], tf.string), sparse_keys=[],
            dense_keys=[tf.constant("x"), tf.constant("y")],
            dense_defaults=[tf.constant([], tf.float32), tf.constant([7], tf.int64)],
            sparse_types=[], dense_shapes=[[2], [1]], name="ParseExampleV1")
        xr, yr = parsed.dense_values
        pred = tf.add(tf.reduce_sum(xr * w[0], axis=1, keepdims=True),
                      tf.cast(yr, tf.float32) * 0.5, name="predictions")
        # classify: tf.io.parse_example (ParseExampleV2).
        feats = v1.io.parse_example(serialized, {
            "x": v1.io.FixedLenFeature([2], tf.float32),
            "y": v1.io.FixedLenFeature([1], tf.int64, default_value=[7])})
        scores = tf.nn.softmax(tf.matmul(feats["x"], w) + b, name="scores")
        n = tf.shape(scores)[0]
        classes = tf.tile(tf.constant([["neg", "pos"]]), [n, 1], name="classes")
        x = v1.placeholder(tf.float32, shape=[None, 2], name="x")
        pscores = tf.nn.softmax(tf.matmul(x, w) + b, name="predict_scores")
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "regress_x_to_y": S.regression_signature_def(serialized, pred),
            "classify_x_to_y": S.classification_signature_def(serialized, classes, scores),
            "serving_default": S.predict_signature_def({"x": x}, {"scores": pscores})})
    rng = _rng(SEED + 7)
    ex = _examples(tf, rng, 3)
    return {"style": "tf1",
            "description": "TF1 model over tf.Example (float x[2], int64 y[1] default 7): "
                           "regress_x_to_y (regress; raw ParseExample V1 op -> predictions[?,1]), "
                           "classify_x_to_y (classify; tf.io.parse_example = ParseExampleV2 -> "
                           "classes neg/pos, scores), serving_default (predict x[?,2] -> scores); "
                           "ref variables.",
            "inputs": {"regress_x_to_y": {"inputs": ex}, "classify_x_to_y": {"inputs": ex}},
            "batch_inputs": lambda key, alias, n, rng: _examples(tf, rng, n) if alias == "inputs" else None}


def build_tf1_vocab(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    words = ["the", "quick", "brown", "fox", "jumps"]
    with tf.Graph().as_default(), v1.Session() as sess:
        to_id = v1.lookup.StaticHashTable(
            v1.lookup.KeyValueTensorInitializer(tf.constant(words), tf.range(len(words), dtype=tf.int64)),
            default_value=-1, name="word_to_id")
        to_word = v1.lookup.StaticHashTable(
            v1.lookup.KeyValueTensorInitializer(tf.range(len(words), dtype=tf.int64), tf.constant(words)),
            default_value="<unk>", name="id_to_word")
        emb = v1.Variable(_rng().standard_normal((len(words) + 1, 3)).astype(np.float32), name="emb",
                          use_resource=False)
        tokens = v1.placeholder(tf.string, shape=[None], name="tokens")
        ids = tf.identity(to_id.lookup(tokens), name="ids")
        vec = tf.gather(emb, tf.where(ids < 0, tf.cast(len(words), tf.int64), ids), name="vectors")
        qids = v1.placeholder(tf.int64, shape=[None], name="qids")
        back = tf.identity(to_word.lookup(qids), name="words")
        sess.run(v1.global_variables_initializer())
        sess.run(v1.tables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"tokens": tokens}, {"ids": ids, "vectors": vec}),
            "to_words": S.predict_signature_def({"ids": qids}, {"words": back})},
            main_op=v1.tables_initializer())

    def toks(n, rng):
        pool = words + ["dog", "", "FOX"]
        return np.array([pool[int(i)].encode() for i in rng.integers(0, len(pool), n)], dtype=object)
    return {"style": "tf1",
            "description": "TF1 hash-table lookups (HashTableV2 + LookupTableImportV2 from "
                           "KeyValueTensorInitializer, main_op = tables_initializer): "
                           "serving_default tokens[?] string -> ids int64 (-1 if absent), vectors "
                           "(embedding gather, ref variable); to_words ids[?] int64 -> words.",
            "inputs": {"serving_default": {"tokens": np.array([b"fox", b"dog", b"the", b"", b"jumps"],
                                                              dtype=object)},
                       "to_words": {"ids": np.array([0, 4, 5, -1, 2], np.int64)}},
            "batch_inputs": lambda key, alias, n, rng: toks(n, rng) if alias == "tokens" else
            (rng.integers(-1, 7, n).astype(np.int64) if alias == "ids" else None)}


def build_tf1_counter(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        count = v1.Variable(0, dtype=tf.int64, name="count", use_resource=False)
        total = v1.Variable(10.0, dtype=tf.float32, name="total", use_resource=True)
        delta = v1.placeholder(tf.int64, shape=[], name="delta")
        x = v1.placeholder(tf.float32, shape=[None], name="x")
        incr = tf.identity(v1.assign_add(count, delta), name="incr")
        add = tf.identity(total.assign_add(tf.reduce_sum(x)), name="add_total")
        read = tf.identity(count, name="read_count")
        read_total = tf.identity(total.read_value(), name="read_total")
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "incr": S.predict_signature_def({"delta": delta}, {"count": incr}),
            "add_total": S.predict_signature_def({"x": x}, {"total": add}),
            "get": S.build_signature_def(inputs={}, outputs={
                "count": S.build_tensor_info(read), "total": S.build_tensor_info(read_total)},
                method_name=S.PREDICT_METHOD_NAME)})
    d1, d5 = np.int64(1), np.int64(5)
    xs = np.array([1.5, 2.0], np.float32)
    return {"style": "tf1",
            "description": "TF1 state across calls: count (int64 ref variable, AssignAdd) and total "
                           "(float resource variable, AssignAddVariableOp). incr delta -> count after "
                           "adding; add_total x[?] -> total += sum(x); get (no inputs) -> count, total. "
                           "golden/sequences/ holds calls made one after another in one session.",
            "inputs": {"incr": {"delta": d1}, "add_total": {"x": xs}},
            "sequences": {"serve": [("get", {}), ("incr", {"delta": d1}), ("incr", {"delta": d5}),
                                    ("add_total", {"x": xs}), ("get", {}), ("incr", {"delta": d1}),
                                    ("add_total", {"x": xs[:1]}), ("get", {})]}}


def build_tf1_cnn(model_dir):
    tf = _tf()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    rng = _rng()
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, shape=[None, 9, 9, 3], name="image")
        k1 = v1.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32), name="k1", use_resource=False)
        b1 = v1.Variable(rng.standard_normal(4).astype(np.float32), name="b1", use_resource=False)
        k2 = v1.Variable(rng.standard_normal((2, 2, 4, 5)).astype(np.float32), name="k2", use_resource=False)
        w = v1.Variable(rng.standard_normal((5, 3)).astype(np.float32), name="w", use_resource=False)
        c1 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k1, strides=1, padding="SAME"), b1), name="c1")
        p1 = tf.nn.max_pool2d(c1, ksize=3, strides=2, padding="SAME", name="p1")      # 5x5
        c2 = tf.nn.conv2d(p1, k2, strides=1, padding="VALID", dilations=2, name="c2")  # 3x3
        p2 = tf.nn.avg_pool2d(c2, ksize=2, strides=1, padding="VALID", name="p2")      # 2x2
        flat = tf.reshape(p2, [-1, 2 * 2 * 5])
        feat = tf.reduce_mean(tf.reshape(flat, [-1, 4, 5]), axis=1, name="features")
        logits = tf.matmul(feat, w, name="logits")
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"image": x}, {
                "logits": logits, "classes": tf.argmax(logits, axis=1, name="classes"),
                "pooled": p1})})
    return {"style": "tf1",
            "description": "TF1 CNN from tf.nn ops, ref variables: image[?,9,9,3] -> Conv2D 3x3 SAME "
                           "+ BiasAdd + Relu -> MaxPool 3/2 SAME -> Conv2D 2x2 VALID dilation 2 -> "
                           "AvgPool 2/1 VALID -> Reshape, Mean -> MatMul; outputs logits, classes "
                           "(ArgMax int64), pooled."}


def build_tf2_multi_sig(model_dir):
    tf = _tf()
    import numpy as np

    class Inner(tf.Module):
        def __init__(self):
            super().__init__(name="inner")
            self.scale = tf.Variable([2.0, -1.0, 0.5], name="scale")

        @tf.function
        def apply(self, x):
            return tf.nn.tanh(x * self.scale)

    class Multi(tf.Module):
        def __init__(self):
            super().__init__(name="multi")
            self.inner = Inner()
            self.offset = tf.Variable(np.int64(1) << 40, name="offset")
            self.suffix = tf.Variable("!", name="suffix")

        @tf.function
        def twice(self, x):  # nested: calls a tf.function that calls another
            return self.inner.apply(self.inner.apply(x))

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def nested(self, x):
            return {"y": self.twice(x) + self.inner.apply(x)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int64, name="n"),
                                      tf.TensorSpec([], tf.int64, name="k")])
        def ints(self, n, k):
            return {"scaled": n * k + self.offset, "cumsum": tf.cumsum(n),
                    "floordiv": tf.math.floordiv(n - 5, k), "mod": tf.math.floormod(n - 5, k),
                    "is_big": n > 4}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="s")])
        def strings(self, s):
            return {"length": tf.strings.length(s), "joined": tf.strings.join([s, self.suffix]),
                    "eq": tf.equal(s, "abc")}

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.bool, name="mask"),
                                      tf.TensorSpec([None, 3], tf.float32, name="x")])
        def masked(self, mask, x):
            return {"kept": tf.where(mask, x, tf.zeros_like(x)),
                    "count": tf.reduce_sum(tf.cast(mask, tf.int32), axis=1),
                    "none": tf.logical_not(tf.reduce_any(mask, axis=1))}

    m = Multi()
    tf.saved_model.save(m, model_dir, signatures={
        "serving_default": m.nested, "ints": m.ints, "strings": m.strings, "masked": m.masked})

    def strs(n, rng):
        pool = [b"abc", b"", b"hello world", b"a\x00b", b"\xc3\xa9t\xc3\xa9"]
        return np.array([pool[int(i)] for i in rng.integers(0, len(pool), n)], dtype=object)
    return {"style": "tf2",
            "description": "tf.Module with four signatures and nested tf.function calls: "
                           "serving_default x[?,3] f32 -> y (calls twice() -> inner.apply()); "
                           "ints n[?] int64, k int64 -> scaled (n*k + 2^40), cumsum, floordiv, mod, "
                           "is_big (bool); strings s[?] -> length int32, joined (+ string variable), "
                           "eq; masked mask[?,3] bool, x -> kept, count int32, none bool.",
            "inputs": {"ints": {"n": np.array([-3, 0, 4, 5, 9, 1 << 33], np.int64), "k": np.int64(3)},
                       "strings": {"s": strs(5, _rng(3))}},
            "batch_inputs": lambda key, alias, n, rng: strs(n, rng) if alias == "s" else None}


def build_tf2_math(model_dir):
    tf = _tf()
    import numpy as np

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def elementwise(self, x):
            a = tf.abs(x)
            return {"exp": tf.exp(x), "log1p_abs": tf.math.log(a + 1.0), "sqrt_abs": tf.sqrt(a),
                    "rsqrt": tf.math.rsqrt(a + 0.5), "square": tf.square(x), "pow3": tf.pow(x, 3.0),
                    "recip": 1.0 / (a + 1.0) - x, "clip": tf.clip_by_value(x, -0.5, 0.5),
                    "max_min": tf.maximum(tf.minimum(x, 1.0), -1.0), "sign": tf.sign(x),
                    "floor": tf.floor(x * 2.0), "sigmoid": tf.sigmoid(x), "tanh": tf.tanh(x),
                    "erf": tf.math.erf(x), "sub_div": (x - 0.25) / 3.0, "softplus": tf.nn.softplus(x)}

        @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float32, name="x")])
        def reduce(self, x):
            return {"sum1": tf.reduce_sum(x, axis=1), "mean_keep": tf.reduce_mean(x, axis=-1, keepdims=True),
                    "max": tf.reduce_max(x, axis=[1, 2]), "min": tf.reduce_min(x, axis=2),
                    "prod": tf.reduce_prod(x, axis=1), "argmax": tf.argmax(x, axis=2),
                    "argmin": tf.argmin(x, axis=1, output_type=tf.int32),
                    "logsumexp": tf.reduce_logsumexp(x, axis=2), "softmax": tf.nn.softmax(x, axis=1),
                    "log_softmax": tf.nn.log_softmax(x)}

        @tf.function(input_signature=[tf.TensorSpec([None, 2, 3], tf.float32, name="a"),
                                      tf.TensorSpec([3, 4], tf.float32, name="b")])
        def matmul(self, a, b):
            return {"batched": tf.matmul(a, b), "bt": tf.matmul(a, tf.transpose(b), transpose_b=True),
                    "einsum": tf.einsum("nij,jk->nik", a, b), "cast_i32": tf.cast(a * 10.0, tf.int32)}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={
        "elementwise": m.elementwise, "reduce": m.reduce, "matmul": m.matmul})
    return {"style": "tf2",
            "description": "tf.Module of math ops, no variables: elementwise (exp, log, sqrt, rsqrt, "
                           "pow, clip, sign, floor, sigmoid, tanh, erf, softplus ...), reduce (sum, "
                           "mean keepdims, max over 2 axes, min, prod, argmax int64, argmin int32, "
                           "logsumexp, softmax axis 1, log_softmax), matmul (batched, transpose_b, "
                           "einsum, cast to int32)."}


def build_tf2_shapes(model_dir):
    tf = _tf()
    import numpy as np

    # At most 16 outputs per signature (what tests/unit/test_model.c reads): two signatures.
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="x"),
                                      tf.TensorSpec([None], tf.int32, name="idx")])
        def shapes(self, x, idx):
            n = tf.shape(x)[0]
            r = tf.reshape(x, [-1, 2, 3])
            parts = tf.split(x, [2, 4], axis=1)
            return {"reshaped": r, "transposed": tf.transpose(r, [0, 2, 1]),
                    "concat": tf.concat([x, x[:, :2]], axis=1), "split_a": parts[0], "split_b": parts[1],
                    "slice": tf.slice(x, [0, 1], [n, 3]), "strided": x[:, ::-2],
                    "gather": tf.gather(x, idx, axis=1), "expand": tf.expand_dims(x, 1),
                    "squeeze": tf.squeeze(tf.expand_dims(x, -1), axis=-1)}

        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="x"),
                                      tf.TensorSpec([None], tf.int32, name="idx")])
        def more(self, x, idx):
            n = tf.shape(x)[0]
            r = tf.reshape(x, [-1, 2, 3])
            return {"pad": tf.pad(x, [[0, 1], [2, 0]], constant_values=-1.0),
                    "tile": tf.tile(x, [1, 2]), "stack": tf.stack([x, -x], axis=1),
                    "one_hot": tf.one_hot(idx, 4), "shape": tf.shape(r),
                    "fill": tf.fill([n, 2], 7.0), "range": tf.range(n), "reverse": tf.reverse(x, [1]),
                    "zeros_like": tf.zeros_like(idx), "broadcast": tf.broadcast_to(x[:, :1], [n, 3])}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.shapes, "more": m.more})

    def idx(n, rng):
        return rng.integers(0, 6, n).astype(np.int32)
    return {"style": "tf2",
            "description": "tf.Module of shape ops on x[?,6] and idx[?] int32: serving_default "
                           "(reshape, transpose, concat, split, slice, strided slice with negative "
                           "stride, gather, expand_dims, squeeze) and more (pad, tile, stack, one_hot, "
                           "shape, fill, range, reverse, zeros_like, broadcast_to).",
            "inputs": {"serving_default": {"idx": np.array([5, 0, 3], np.int32)},
                       "more": {"idx": np.array([5, 0, 3], np.int32)}},
            "batch_inputs": lambda key, alias, n, rng: idx(3, rng) if alias == "idx" else None}


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
    "tf1_ref_vars": build_tf1_ref_vars,
    "tf1_resource_vars": build_tf1_resource_vars,
    "tf1_classify_regress": build_tf1_classify_regress,
    "tf1_vocab": build_tf1_vocab,
    "tf1_counter": build_tf1_counter,
    "tf1_cnn": build_tf1_cnn,
    "tf2_multi_sig": build_tf2_multi_sig,
    "tf2_math": build_tf2_math,
    "tf2_shapes": build_tf2_shapes,
    **KERAS_BUILDERS,
    **CONTROL_BUILDERS,
    **AUGMENT_BUILDERS,
    **SERVING_BUILDERS,
    **FOLD_BUILDERS,
    **RESIDUAL_BUILDERS,
    **TEXT_BUILDERS,
    **CONTROL2_BUILDERS,
    **TRANSFORMER_BUILDERS,
    **LAYER_BUILDERS,
}


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


def default_input(info, rng, batch=None):
    """A fixed input for a TensorInfo: unknown dims become 2 (the leading one `batch` if given)."""
    import numpy as np
    tf = _tf()
    dt = tf.as_dtype(info.dtype)
    if info.tensor_shape.unknown_rank:
        shape = [2, 3]
    else:
        shape = [d.size if d.size >= 0 else 2 for d in info.tensor_shape.dim]
        if batch is not None and shape and info.tensor_shape.dim[0].size < 0:
            shape[0] = batch
    if dt.is_floating:
        return rng.standard_normal(shape).astype(dt.as_numpy_dtype)
    if dt.is_integer:
        return rng.integers(0, 10, shape).astype(dt.as_numpy_dtype)
    if dt.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    raise ValueError("no default input for dtype %s" % dt)


# Extra golden cases at these batch sizes for every signature with an input whose leading dim is
# unknown (batch 1 catches kernels that special-case a single row, 3 an odd count).
EXTRA_BATCHES = (1, 3)


def _batched(info):
    return not info.tensor_shape.unknown_rank and len(info.tensor_shape.dim) > 0 and \
        info.tensor_shape.dim[0].size < 0


def _write_case(d, tags, key, feeds, outs, sig, extra=None):
    import numpy as np
    tf = _tf()
    entry = {"tags": tags, "signature": key, "inputs": {}, "outputs": {}}
    if extra:
        entry.update(extra)
    for sub, tensors, infos in (("inputs", feeds, sig.inputs), ("outputs", outs, sig.outputs)):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        for alias, val in sorted(tensors.items()):
            dt = tf.as_dtype(infos[alias].dtype)
            fname, extra_f = save_array(val, dt, os.path.join(d, sub, sanitize(alias)))
            entry[sub][alias] = dict({"dtype": dtype_name(dt),
                                      "shape": list(np.asarray(val).shape),
                                      "file": "%s/%s" % (sub, fname)}, **extra_f)
    with open(os.path.join(d, "signature.json"), "w") as f:
        json.dump(entry, f, indent=1)
        f.write("\n")
    return entry


def _run(model_dir, style, tags, key, sig, feeds):
    if style == "tf1":
        return _run_tf1(model_dir, tags, sig, feeds)
    return _run_tf2(model_dir, key, feeds)


def record_outputs(model_dir, golden, style, custom, batch_inputs=None, sequences=None):
    """Runs every signature on fixed inputs and writes inputs/outputs under golden/outputs/.

    Each case loads the model afresh. <tags>__<sig> is the main case (unknown dims 2, or the
    builder's inputs); <tags>__<sig>__b1 / __b3 repeat it at batch 1 and 3 when an input has an
    unknown leading dim. `sequences` ({tags: [(sig, feeds), ...]}) are run one after another in one
    session and written under golden/sequences/<tags>/<NN>_<sig>/."""
    tf = _tf()
    results = {}
    nmain = 0
    for mg in meta_graphs(model_dir):
        tags = list(mg.meta_info_def.tags)
        tagname = sanitize(",".join(tags)).replace(",", "_")
        for key in sorted(mg.signature_def):
            sig = mg.signature_def[key]
            if key.startswith("__") or not sig.outputs:
                continue
            # Seeded by the main case's index only, so that adding cases never changes old ones.
            rng = _rng(SEED + nmain)
            nmain += 1
            feeds = {}
            for alias in sorted(sig.inputs):
                v = custom.get(key, {}).get(alias)
                feeds[alias] = v if v is not None else default_input(sig.inputs[alias], rng)
            outs = _run(model_dir, style, tags, key, sig, feeds)
            case = "%s__%s" % (tagname, sanitize(key))
            results[case] = _write_case(os.path.join(golden, "outputs", case), tags, key, feeds,
                                        outs, sig)
            if not any(_batched(sig.inputs[a]) for a in sig.inputs):
                continue
            for batch in EXTRA_BATCHES:
                brng = _rng(SEED + 1000 * batch + nmain)
                bfeeds = {}
                try:
                    for alias in sorted(sig.inputs):
                        info = sig.inputs[alias]
                        v = batch_inputs(key, alias, batch, brng) if batch_inputs else None
                        if v is None and not _batched(info) and alias in feeds:
                            v = feeds[alias]  # e.g. a scalar factor: keep the main case's value
                        bfeeds[alias] = v if v is not None else default_input(info, brng, batch)
                except ValueError:
                    continue  # a string input the builder gives no generator for
                bouts = _run(model_dir, style, tags, key, sig, bfeeds)
                bcase = "%s__b%d" % (case, batch)
                results[bcase] = _write_case(os.path.join(golden, "outputs", bcase), tags, key,
                                             bfeeds, bouts, sig, {"batch": batch})
    for tagname, steps in (sequences or {}).items():
        mg = [m for m in meta_graphs(model_dir)
              if sanitize(",".join(m.meta_info_def.tags)).replace(",", "_") == tagname][0]
        tags = list(mg.meta_info_def.tags)
        outs_all = _run_sequence(model_dir, style, tags, mg, steps)
        root = os.path.join(golden, "sequences", tagname)
        listing = []
        for i, ((key, feeds), outs) in enumerate(zip(steps, outs_all)):
            name = "%02d_%s" % (i, sanitize(key))
            _write_case(os.path.join(root, name), tags, key, feeds, outs, mg.signature_def[key],
                        {"step": i})
            listing.append(name)
        with open(os.path.join(root, "sequence.json"), "w") as f:
            json.dump({"tags": tags, "steps": listing,
                       "note": "run in this order on one loaded model; each step's outputs "
                               "depend on the state the steps before it left"}, f, indent=1)
            f.write("\n")
    return results


def _run_sequence(model_dir, style, tags, mg, steps):
    tf = _tf()
    out = []
    if style == "tf1":
        v1 = tf.compat.v1
        with tf.Graph().as_default(), v1.Session(config=v1.ConfigProto(allow_soft_placement=True)) as sess:
            v1.saved_model.loader.load(sess, tags, model_dir)
            for key, feeds in steps:
                sig = mg.signature_def[key]
                aliases = sorted(sig.outputs)
                vals = sess.run([sig.outputs[a].name for a in aliases],
                                feed_dict={sig.inputs[a].name: v for a, v in feeds.items()})
                out.append(dict(zip(aliases, vals)))
        return out
    loaded = tf.saved_model.load(model_dir, tags=tags)
    for key, feeds in steps:
        res = loaded.signatures[key](**{a: tf.constant(v) for a, v in feeds.items()})
        out.append({a: t.numpy() for a, t in res.items()})
    return out


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


def build_one(name, out, cli_subprocess=False, goldens_only=False):
    """Builds model `name` under out/name and records its goldens; prints its manifest entry as JSON.

    goldens_only: keep the SavedModel already at out/name/model (byte for byte) and only record
    its goldens again; the builder still runs, into a scratch dir, for its description and inputs."""
    import numpy as np
    tf = _tf()
    np.random.seed(SEED)
    tf.random.set_seed(SEED)
    root = os.path.join(out, name)
    model_dir = os.path.join(root, "model")
    golden = os.path.join(root, "golden")
    if goldens_only and os.path.isdir(model_dir):
        scratch = tempfile.mkdtemp(prefix="zoo_scratch_")
        info = BUILDERS[name](os.path.join(scratch, "model"))
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(golden, ignore_errors=True)
    else:
        shutil.rmtree(root, ignore_errors=True)
        info = BUILDERS[name](model_dir)
    os.makedirs(golden, exist_ok=True)
    varlist = record_vars(model_dir, golden)
    outputs = record_outputs(model_dir, golden, info["style"], info.get("inputs", {}),
                             info.get("batch_inputs"), info.get("sequences"))
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


LAYOUT = {
    "model": "<name>/model: the SavedModel as TensorFlow wrote it",
    "golden": "<name>/golden: saved_model_cli stdout (show_*.txt, flags in this manifest's cli), "
              "vars.json + vars/*.npy (every bundle entry), outputs/<case>/ and sequences/<tags>/",
    "outputs": "<name>/golden/outputs/<case>/signature.json + inputs/<alias>.{npy,json} + "
               "outputs/<alias>.{npy,json}: TensorFlow's outputs for one call of one signature on a "
               "freshly loaded model. <case> is <tags>__<signature> (tags joined by '_', e.g. "
               "serve_gpu__relu_only), and <tags>__<signature>__b1 / __b3 repeat it at batch 1 and 3 "
               "when an input has an unknown leading dim (signature.json then has \"batch\": N).",
    "signature.json": "{\"tags\": [...], \"signature\": key, \"inputs\": {alias: {\"dtype\": "
                      "\"DT_FLOAT\", \"shape\": [...], \"file\": \"inputs/x.npy\", "
                      "\"sha256_le\"?}}, \"outputs\": {same}, \"batch\"?: N, \"step\"?: N}; "
                      "file paths are relative to the case dir",
    "npy": "numeric tensors: .npy version 1.0, little-endian, C order, the TF dtype's numpy dtype "
           "(bfloat16 as its raw uint16 bits, noted in npy_note); 0-d arrays keep shape ()",
    "json": "DT_STRING tensors: .json {\"dtype\": \"DT_STRING\", \"shape\": [...], \"encoding\": "
            "\"base64\", \"value\": nested lists of base64 strings} (exact bytes, NULs included)",
    "sequences": "<name>/golden/sequences/<tags>/sequence.json lists steps NN_<signature> (same "
                 "layout as a case, plus \"step\": N) to run in order on ONE loaded model: "
                 "outputs depend on the state the earlier steps left (tf1_counter)",
    "tolerance": "float32 outputs within 1e-5 relative of TensorFlow's; integers, bools and "
                 "strings exactly",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="build only these models")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--cli-subprocess", action="store_true",
                    help="run saved_model_cli as a separate process per command (slow; the default "
                         "calls its main() inside the model's process)")
    ap.add_argument("--goldens-only", action="store_true",
                    help="keep each model's committed SavedModel and record its goldens again")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: build one model in this process
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if a.one:
        build_one(a.one, out, a.cli_subprocess, a.goldens_only)
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
                           + (["--cli-subprocess"] if a.cli_subprocess else [])
                           + (["--goldens-only"] if a.goldens_only else []),
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
           "layout": LAYOUT,
           "models": [manifest[k] for k in BUILDERS if k in manifest]}
    with open(manifest_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
