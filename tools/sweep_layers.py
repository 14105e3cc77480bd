#!/usr/bin/env python3
"""tools/sweep_layers.py - does every keras.layers layer load here, through the CLI, and give TF's outputs?
(not CI: slow)

  build/venv/bin/python tools/sweep_layers.py [--build build] [--out /tmp/k3/layers] [--only A,B/v,...]
      [--styles export,save] [--chunk N] [--reuse] [--json FILE] [--md FILE] [--list]

The layer classes are those tests/interop/test_keras_layer_sweep.py enumerates (every public name of
keras.layers bound to a subclass of keras.layers.Layer; a class with neither a builder nor an
EXCLUDED reason is a FAIL row here too, so a new layer cannot be missed), built by that file's
BUILDERS (one small functional model around one instance, inputs per family: images NHWC, sequences,
3-D volumes, integer ids, strings, audio) plus the VARIANTS below (padding same/valid, strides,
dilation, data_format channels_first, RNN return_sequences / go_backwards, masks from
Embedding(mask_zero=True) into every consumer of a mask, explicit training=False). Weights are random
(the interop file's randomize: positive variances), inputs seeded per row.
Each model is saved both ways users do (as tools/sweep_apps.py):
  export  model.export(DIR)                       (Keras 3's ExportArchive, serving_default)
  save    tf.saved_model.save(model, DIR)         (the Keras model as a tf.Module; a Model subclass gets
                                                   an explicit signature)
TensorFlow loads each SavedModel back and runs serving_default on the seeded input (the reference).
Then `BUILD/savedmodel scan --json` lists the ops this runtime lacks and `BUILD/savedmodel run --inputs
... --outdir` runs it here. The error is max |ours - TF| / max(1, max |TF|) over every float output
(the interop sweep's rule: ok at <= 1e-5; rows of a mixed_float16 / mixed_bfloat16 dtype policy:
4 ulps of the 16-bit type, MIXED_TOL), anything else must be equal. Rows: ok / MISMATCH / FAIL
(load or run error here, with its message) / TF fails (TensorFlow could not save or run it: not ours).
--policy mixed_float16 (or mixed_bfloat16) builds every row under that Keras dtype policy (16-bit
compute, float32 variables), judged by MIXED_TOL. Exports go to --out (never commit them). Run it under `flock -s /tmp/bench.lock nice -n 10` (a test, not
a timing), a few families at a time (--only takes class names or Class/variant keys). Exits 1 on any
FAIL or MISMATCH.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOL = 1e-5
# mixed precision rows compute in 16 bits: a few ulps of the 16-bit type (relative to max |TF|) instead
MIXED_TOL = {"mixed_float16": 4 * 2.0 ** -10, "mixed_bfloat16": 4 * 2.0 ** -7}


def tol(key):
    return max([v for k, v in MIXED_TOL.items() if k in key] + [TOL])


def set_policy(keras, policy):
    if policy:
        keras.config.set_dtype_policy(policy)
STYLES = ("export", "save")


def sweep_module():
    sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
    import test_keras_layer_sweep as S
    return S


# ---- the variants this sweep adds to the interop file's builders ------------------------------------
def variants(S, keras):
    """{key: S.B(...)}: options the interop table does not cover, keyed Class/variant."""
    import numpy as np  # noqa: F401 - builders may use it
    L = keras.layers
    B = S.B
    f = "float32"
    img, seq, vol = [((6, 6, 3), f, "normal")], [((7, 4), f, "normal")], [((4, 5, 6, 2), f, "normal")]
    img7 = [((7, 7, 4), f, "normal")]  # odd: SAME padding with stride 2 pads unevenly
    ints = [((6,), "int32", "int:6")]   # ids 0..5: zeros are masked by mask_zero=True
    t = {}
    # convolutions: padding, strides, dilation, data_format
    t["Conv2D/valid_dilated"] = B(lambda: L.Conv2D(3, 3, dilation_rate=2), img7)
    t["Conv2D/same_strided_odd"] = B(lambda: L.Conv2D(3, 3, strides=2, padding="same", activation="relu"), img7)
    t["Conv2D/same_dilated"] = B(lambda: L.Conv2D(2, 3, dilation_rate=(2, 1), padding="same"), img7)
    t["Conv2D/channels_first"] = B(lambda: L.Conv2D(3, 3, padding="same", data_format="channels_first"), img7)
    t["Conv2D/no_bias_1x1"] = B(lambda: L.Conv2D(5, 1, use_bias=False), img7)
    t["Conv1D/same_strided"] = B(lambda: L.Conv1D(3, 3, strides=2, padding="same"), seq)
    t["Conv1D/channels_first"] = B(lambda: L.Conv1D(3, 2, data_format="channels_first"), seq)
    t["Conv3D/channels_first"] = B(lambda: L.Conv3D(2, 2, data_format="channels_first"), vol)
    t["Conv2DTranspose/channels_first"] = B(lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same",
                                                                      data_format="channels_first"), img7)
    t["Conv2DTranspose/same_odd"] = B(lambda: L.Conv2DTranspose(2, 4, strides=3, padding="same"), img7)
    t["DepthwiseConv2D/strided_valid"] = B(lambda: L.DepthwiseConv2D(3, strides=2, depth_multiplier=2), img7)
    t["DepthwiseConv2D/channels_first"] = B(lambda: L.DepthwiseConv2D(3, padding="same",
                                                                      data_format="channels_first"), img7)
    t["SeparableConv2D/dilated_same"] = B(lambda: L.SeparableConv2D(3, 3, dilation_rate=2, padding="same"), img7)
    t["SeparableConv2D/channels_first"] = B(lambda: L.SeparableConv2D(3, 3, data_format="channels_first"), img7)
    t["SeparableConv1D/strided_same"] = B(lambda: L.SeparableConv1D(3, 3, strides=2, padding="same"), seq)
    # pooling, padding, upsampling, cropping in channels_first
    t["MaxPooling2D/channels_first"] = B(lambda: L.MaxPooling2D(2, data_format="channels_first"), img7)
    t["MaxPooling2D/valid_odd"] = B(lambda: L.MaxPooling2D(3, strides=2), img7)
    t["AveragePooling2D/channels_first"] = B(lambda: L.AveragePooling2D(2, padding="same",
                                                                        data_format="channels_first"), img7)
    t["AveragePooling2D/same_odd"] = B(lambda: L.AveragePooling2D(2, padding="same"), img7)
    t["MaxPooling1D/channels_first"] = B(lambda: L.MaxPooling1D(2, data_format="channels_first"), seq)
    t["MaxPooling3D/channels_first"] = B(lambda: L.MaxPooling3D(2, data_format="channels_first"), vol)
    t["AveragePooling3D/channels_first"] = B(lambda: L.AveragePooling3D(2, data_format="channels_first"), vol)
    t["GlobalAveragePooling2D/channels_first"] = B(lambda: L.GlobalAveragePooling2D(data_format="channels_first"), img)
    t["GlobalMaxPooling2D/channels_first"] = B(lambda: L.GlobalMaxPooling2D(data_format="channels_first",
                                                                            keepdims=True), img)
    t["GlobalAveragePooling1D/channels_first"] = B(lambda: L.GlobalAveragePooling1D(data_format="channels_first"),
                                                   seq)
    t["GlobalMaxPooling3D/channels_first"] = B(lambda: L.GlobalMaxPooling3D(data_format="channels_first"), vol)
    t["UpSampling2D/channels_first"] = B(lambda: L.UpSampling2D(2, data_format="channels_first"), img)
    t["UpSampling3D/channels_first"] = B(lambda: L.UpSampling3D(2, data_format="channels_first"), vol)
    t["ZeroPadding2D/channels_first"] = B(lambda: L.ZeroPadding2D(1, data_format="channels_first"), img)
    # RNNs: return_sequences, go_backwards (stateful off: the default, and what export supports)
    t["SimpleRNN/seq_backwards"] = B(lambda: L.SimpleRNN(3, return_sequences=True, go_backwards=True), seq)
    t["LSTM/backwards_last"] = B(lambda: L.LSTM(3, go_backwards=True), seq)
    t["GRU/seq"] = B(lambda: L.GRU(3, return_sequences=True), seq)
    t["GRU/seq_backwards_reset_before"] = B(lambda: L.GRU(2, return_sequences=True, go_backwards=True,
                                                          reset_after=False), seq)
    t["Bidirectional/simplernn_ave"] = B(lambda: L.Bidirectional(L.SimpleRNN(2, return_sequences=True),
                                                                merge_mode="ave"), seq)
    t["Bidirectional/gru_mul"] = B(lambda: L.Bidirectional(L.GRU(2), merge_mode="mul"), seq)
    t["LSTM/stacked"] = B(lambda: (lambda x: L.LSTM(2)(L.LSTM(3, return_sequences=True)(x))), seq)
    t["LSTM/unroll_seq"] = B(lambda: L.LSTM(3, return_sequences=True, unroll=True), seq)
    t["GRU/unroll"] = B(lambda: L.GRU(3, unroll=True, go_backwards=True), seq)
    # masks from Embedding(mask_zero=True) into the layers that consume one
    emb = (lambda: L.Embedding(6, 4, mask_zero=True))
    t["Embedding/mask_gru_seq"] = B(lambda: (lambda x: L.GRU(3, return_sequences=True)(emb()(x))), ints)
    t["Embedding/mask_simplernn_back"] = B(lambda: (lambda x: L.SimpleRNN(3, go_backwards=True)(emb()(x))), ints)
    t["Embedding/mask_lstm_seq"] = B(lambda: (lambda x: L.LSTM(2, return_sequences=True)(emb()(x))), ints)
    t["Embedding/mask_bidirectional"] = B(lambda: (lambda x: L.Bidirectional(L.LSTM(2, return_sequences=True))(
        emb()(x))), ints)
    t["Embedding/mask_bidirectional_last"] = B(lambda: (lambda x: L.Bidirectional(L.GRU(2))(emb()(x))), ints)
    t["Embedding/mask_stacked"] = B(lambda: (lambda x: L.GRU(2)(L.LSTM(3, return_sequences=True)(emb()(x)))), ints)
    t["Embedding/mask_mha"] = B(lambda: (lambda x: (lambda e: L.MultiHeadAttention(2, 2)(e, e))(emb()(x))), ints)
    t["Embedding/mask_attention"] = B(lambda: (lambda x: (lambda e: L.Attention()([e, e]))(emb()(x))), ints)
    t["Embedding/mask_globalmax"] = B(lambda: (lambda x: L.GlobalMaxPooling1D()(emb()(x))), ints)
    t["Embedding/mask_timedistributed"] = B(lambda: (lambda x: L.LSTM(2)(L.TimeDistributed(L.Dense(3))(emb()(x)))),
                                            ints)
    t["Embedding/mask_conv1d_lstm"] = B(lambda: (lambda x: L.LSTM(2)(L.Conv1D(3, 1)(emb()(x)))), ints)
    # explicit training=False on the layers that behave differently in training
    for n, mk in {"BatchNormalization": lambda: L.BatchNormalization(),
                  "Dropout": lambda: L.Dropout(0.5), "GaussianNoise": lambda: L.GaussianNoise(0.3),
                  "SpatialDropout2D": lambda: L.SpatialDropout2D(0.3),
                  "RandomFlip": lambda: L.RandomFlip(seed=1), "RandomRotation": lambda: L.RandomRotation(0.2, seed=1)
                  }.items():
        t[f"{n}/training_false"] = B(lambda mk=mk: (lambda x: mk()(x, training=False)), img)
    t["LSTM/dropout_training_false"] = B(lambda: (lambda x: L.LSTM(3, dropout=0.3, recurrent_dropout=0.3)(
        x, training=False)), seq)
    # a few shapes the per-class rows do not reach
    t["TimeDistributed/conv2d"] = B(lambda: L.TimeDistributed(L.Conv2D(2, 3, padding="same")),
                                    [((3, 6, 6, 2), f, "normal")])
    t["Dense/rank4"] = B(lambda: L.Dense(3, activation="softmax"), img)
    t["BatchNormalization/conv_relu"] = B(lambda: (lambda x: L.ReLU()(L.BatchNormalization()(
        L.Conv2D(4, 3, padding="same", use_bias=False)(x)))), img7)
    t["LayerNormalization/image"] = B(lambda: L.LayerNormalization(axis=-1), img)
    t["Conv3DTranspose/channels_first"] = B(lambda: L.Conv3DTranspose(2, 2, strides=2, data_format="channels_first"),
                                            vol)
    t["Cropping3D/channels_first"] = B(lambda: L.Cropping3D(((1, 0), (1, 1), (0, 0)), data_format="channels_first"),
                                       vol)

    # dynamic shapes: keras.Input with None dimensions (what users export for any size), fed a size
    def dyn(make, shapes, feeds, **kw):
        b = B(make, feeds, **kw)
        b.input_shapes = shapes
        return b
    hw = [((7, 9, 3), f, "normal")]
    t["Conv2D/dynamic_hw"] = dyn(lambda: L.Conv2D(3, 3, strides=2, padding="same"), [(None, None, 3)], hw)
    t["MaxPooling2D/dynamic_hw"] = dyn(lambda: L.MaxPooling2D(2, padding="same"), [(None, None, 3)], hw)
    t["GlobalAveragePooling2D/dynamic_hw"] = dyn(lambda: L.GlobalAveragePooling2D(), [(None, None, 3)], hw)
    t["UpSampling2D/dynamic_hw"] = dyn(lambda: L.UpSampling2D(2, interpolation="bilinear"), [(None, None, 3)], hw)
    t["ZeroPadding2D/dynamic_hw"] = dyn(lambda: L.ZeroPadding2D(1), [(None, None, 3)], hw)
    t["Resizing/dynamic_hw"] = dyn(lambda: L.Resizing(4, 5), [(None, None, 3)], [((7, 9, 3), f, "image")])
    t["DepthwiseConv2D/dynamic_hw"] = dyn(lambda: L.DepthwiseConv2D(3), [(None, None, 3)], hw)
    t["Conv2DTranspose/dynamic_hw"] = dyn(lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"),
                                          [(None, None, 3)], hw)
    t["LSTM/dynamic_len"] = dyn(lambda: L.LSTM(3, return_sequences=True), [(None, 4)], seq)
    t["GRU/dynamic_len"] = dyn(lambda: L.GRU(3), [(None, 4)], seq)
    t["Bidirectional/dynamic_len"] = dyn(lambda: L.Bidirectional(L.LSTM(2)), [(None, 4)], seq)
    t["Conv1D/dynamic_causal"] = dyn(lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2), [(None, 4)], seq)
    t["MultiHeadAttention/dynamic_len"] = dyn(lambda: (lambda q: L.MultiHeadAttention(2, 3)(q, q, use_causal_mask=True)),
                                              [(None, 4)], seq)
    t["Embedding/dynamic_mask_lstm"] = dyn(lambda: (lambda x: L.LSTM(2)(emb()(x))), [(None,)], ints)
    t["GlobalAveragePooling1D/dynamic_mask"] = dyn(lambda: (lambda x: L.GlobalAveragePooling1D()(emb()(x))),
                                                   [(None,)], ints)
    t["LayerNormalization/dynamic"] = dyn(lambda: L.LayerNormalization(), [(None, 5)], [((4, 5), f, "normal")])
    t["TextVectorization/no_length"] = B(lambda: L.TextVectorization(max_tokens=20), [((), "string", "text")],
                                         adapt=["the cat sat", "a dog ran far away", "The Cat, ran!"])
    t["TextVectorization/tf_idf"] = B(lambda: L.TextVectorization(max_tokens=12, output_mode="tf_idf",
                                                                  ngrams=2), [((), "string", "text")],
                                      adapt=["the cat sat", "a dog ran far away", "The Cat, ran!"])
    # mixed precision (float16 compute inside, float32 out, as Keras's guide has it)
    for n, mk, ins in (("Dense", lambda: L.Dense(4, dtype="mixed_float16"), [((4, 5), f, "normal")]),
                       ("Conv2D", lambda: L.Conv2D(3, 3, padding="same", dtype="mixed_float16"), img),
                       ("LSTM", lambda: L.LSTM(3, dtype="mixed_float16"), seq),
                       ("LayerNormalization", lambda: L.LayerNormalization(dtype="mixed_float16"), seq),
                       ("BatchNormalization", lambda: L.BatchNormalization(dtype="mixed_float16"), img),
                       ("MultiHeadAttention", lambda: (lambda q: L.MultiHeadAttention(2, 2, dtype="mixed_float16")(
                           q, q)), seq),
                       ("Embedding", lambda: L.Embedding(10, 3, dtype="mixed_float16"), [((5,), "int32", "int:10")]),
                       ("DepthwiseConv2D", lambda: L.DepthwiseConv2D(3, dtype="mixed_float16"), img),
                       ("SeparableConv2D", lambda: L.SeparableConv2D(3, 3, dtype="mixed_float16"), img),
                       ("Conv2DTranspose", lambda: L.Conv2DTranspose(2, 3, strides=2, dtype="mixed_float16"), img),
                       ("Conv1D", lambda: L.Conv1D(3, 3, padding="causal", dtype="mixed_float16"), seq),
                       ("Conv3D", lambda: L.Conv3D(2, 2, dtype="mixed_float16"), vol),
                       ("GRU", lambda: L.GRU(3, return_sequences=True, dtype="mixed_float16"), seq),
                       ("EinsumDense", lambda: L.EinsumDense("abc,cd->abd", (7, 3), bias_axes="d",
                                                             dtype="mixed_float16"), seq),
                       ("Dense_bf16", lambda: L.Dense(4, dtype="mixed_bfloat16"), [((4, 5), f, "normal")]),
                       ("Conv2D_bf16", lambda: L.Conv2D(3, 3, dtype="mixed_bfloat16"), img),
                       ("LSTM_bf16", lambda: L.LSTM(3, dtype="mixed_bfloat16"), seq)):
        cls = n.split("_")[0]
        t[f"{cls}/mixed_{'bfloat16' if 'bf16' in n else 'float16'}"] = B(
            lambda mk=mk: (lambda x: L.Activation("linear", dtype="float32")(mk()(x))), ins)
    return t


def all_builders(S, keras):
    t = S.builders()
    for k, b in variants(S, keras).items():
        if k in t:
            raise SystemExit("sweep_layers: variant %s is already an interop row" % k)
        t[k] = b
    return t


# ---- child side (the venv's python, a chunk of rows): one JSON line on stdout -----------------------
def child_list():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    S = sweep_module()
    classes = S.layer_classes()
    table = all_builders(S, keras)
    return {"classes": classes, "excluded": S.EXCLUDED, "keys": sorted(table)}


def feed_names(fn, names):
    """serving_default's argument names for our inputs in0..inN: the same names (model.export), or
    inputs, inputs_1, ... in the order of the model's inputs (tf.saved_model.save)."""
    sig = sorted(fn.structured_input_signature[1])
    if sorted(names) == sig:
        return {n: n for n in names}

    def order(a):
        return int(a.rsplit("_", 1)[1]) if "_" in a and a.rsplit("_", 1)[1].isdigit() else 0
    sig = sorted(sig, key=order)
    if len(sig) != len(names):
        raise RuntimeError("signature takes %s, the model %s" % (sig, names))
    return dict(zip(names, sig))


def child_build(keys, out, styles, policy=""):
    """Builds, saves and runs TF on each row; writes OUT/<row>/meta.json, x*.npy, <style>/tf_*.npy."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import tensorflow as tf
    import keras
    import absl.logging
    absl.logging.set_verbosity("error")
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    S = sweep_module()
    set_policy(keras, policy)
    table = all_builders(S, keras)
    done = []
    for key in keys:
        b = table[key]
        rdir = os.path.join(out, key.replace("/", "."))
        os.makedirs(rdir, exist_ok=True)
        res = {"key": key, "styles": {}}
        rng = np.random.default_rng(S.SEED + sum(map(ord, key)))
        try:
            keras.utils.set_random_seed(S.SEED)
            feed = {f"in{i}": S.make_input(s, dt, k, b.batch, rng) for i, (s, dt, k) in enumerate(b.inputs)}
            if b.model is not None:
                model = b.model()
            elif b.subclass:
                model = S._Wrap(b.make())
                model(*feed.values())
            else:
                ishapes = getattr(b, "input_shapes", None) or [s for s, _, _ in b.inputs]
                ins = [keras.Input(s, dtype=dt, name=f"in{i}") for i, (s, (_, dt, _)) in enumerate(zip(ishapes, b.inputs))]
                layer = b.make()
                if b.adapt is not None:
                    layer.adapt(b.adapt)
                o = layer(ins[0] if len(ins) == 1 else ins) if isinstance(layer, keras.layers.Layer) else layer(*ins)
                model = keras.Model(ins, o)
            if not b.keep_weights:
                S.randomize(model, rng)
            res["ops"] = []
            for n, v in feed.items():
                np.save(os.path.join(rdir, n + ".npy"), v.astype("S") if v.dtype.kind == "O" else v)
            ishapes = getattr(b, "input_shapes", None) or [s for s, _, _ in b.inputs]
            specs = [tf.TensorSpec((None,) + tuple(s), dt, name=f"in{i}")
                     for i, (s, (_, dt, _)) in enumerate(zip(ishapes, b.inputs))]
        except Exception as e:  # noqa: BLE001 - a builder Keras refuses is a row
            for s in styles:
                res["styles"][s] = {"tf_error": ("build: %s: %s" % (type(e).__name__, e))[:300]}
            done.append(res)
            continue
        for style in styles:
            d = os.path.join(rdir, style, "model")
            r = res["styles"][style] = {"dir": d}
            try:
                if style == "export":
                    if b.subclass:
                        model.export(d, verbose=False, input_signature=specs)
                    else:
                        model.export(d, verbose=False)
                elif b.subclass:  # a subclassed model has no input structure to sign: give it one
                    sig = tf.function(lambda *xs: {"output_0": model(*xs)}, input_signature=specs)
                    tf.saved_model.save(model, d, signatures=sig)
                else:
                    tf.saved_model.save(model, d)
                r["ops"] = S.graph_ops(d)
                fn = tf.saved_model.load(d).signatures["serving_default"]
                names = feed_names(fn, list(feed))
                r["inputs"] = names
                y = fn(**{names[n]: tf.constant(v) for n, v in feed.items()})
                r["outputs"] = sorted(y)
                for k in y:
                    v = y[k].numpy()
                    np.save(os.path.join(rdir, style, "tf_%s.npy" % k), v.astype("S") if v.dtype.kind == "O" else v)
            except Exception as e:  # noqa: BLE001 - a style TF itself cannot save is a row
                r["tf_error"] = ("%s: %s" % (type(e).__name__, " ".join(str(e).split())))[:300]
        with open(os.path.join(rdir, "meta.json"), "w") as fh:
            json.dump(res, fh)
        done.append(res)
    return done


# ---- driver side ------------------------------------------------------------------------------------
def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout
    except OSError as e:  # the binary being rebuilt: a row's error, not the end of the sweep
        return 126, "", "cannot run %s: %s" % (cmd[0], e)


def child(py, timeout, *args):
    rc, out, err = run([py, os.path.abspath(__file__), "--child"] + [str(a) for a in args], timeout)
    if rc != 0:
        return None, err.strip().splitlines()[-1] if err.strip() else "rc %d" % rc
    return json.loads(out.strip().splitlines()[-1]), None


def compare(got, want):
    """(relative error or None, problem or None): floats by max |d| / max(1, max |TF|), the rest equal."""
    import numpy as np
    if got.shape != want.shape:
        return None, "shape %s, TF %s" % (got.shape, want.shape)
    if want.dtype.kind in "fc":
        if got.dtype != want.dtype:
            return None, "dtype %s, TF %s" % (got.dtype, want.dtype)
        fin = np.isfinite(want)
        if not np.array_equal(fin, np.isfinite(got)) or not np.array_equal(np.isnan(want), np.isnan(got)):
            return None, "non-finite values differ"
        if not fin.any():
            return 0.0, None
        scale = max(1.0, float(np.abs(want[fin]).max()))
        return float(np.abs(got[fin].astype(np.float64) - want[fin]).max()) / scale, None
    if got.dtype.kind in "SU" or want.dtype.kind in "SU":
        return (0.0, None) if got.astype("S").tolist() == want.astype("S").tolist() else \
            (None, "strings differ: %s vs TF %s" % (got.ravel()[:3], want.ravel()[:3]))
    if got.dtype != want.dtype:
        return None, "dtype %s, TF %s" % (got.dtype, want.dtype)
    return (0.0, None) if np.array_equal(got, want) else (None, "values differ")


def ours(args, rdir, style, r):
    """scan + run one SavedModel here; fills r with unsupported / error / err."""
    import numpy as np
    exe = os.path.join(args.build, "savedmodel")
    rc, out, err = run([exe, "scan", "--dir", r["dir"], "--tag_set", "serve", "--json"], 300)
    try:
        r["unsupported"] = sorted({o for mg in json.loads(out)["meta_graphs"] for o in mg["unsupported_ops"]})
    except (ValueError, KeyError):
        r["unsupported"] = ["?scan rc %d: %s" % (rc, err.strip()[-200:])]
    od = os.path.join(rdir, style, "ours")
    inputs = ";".join("%s=%s" % (a, os.path.join(rdir, n + ".npy")) for n, a in sorted(r["inputs"].items()))
    rc, out, err = run([exe, "run", "--dir", r["dir"], "--tag_set", "serve", "--signature_def", "serving_default",
                        "--inputs", inputs, "--outdir", od, "--overwrite"], 600)
    got = {}
    if rc != 0 and "no type for DT_BFLOAT16" in err:  # .npy has no bfloat16: read the values from --json
        rc, out, err = run([exe, "run", "--dir", r["dir"], "--tag_set", "serve", "--signature_def",
                            "serving_default", "--inputs", inputs, "--json"], 600)
        try:
            got = {k: np.array(v["value"], np.float32) for k, v in json.loads(out)["outputs"].items()}
        except (ValueError, KeyError, TypeError):
            pass
    if rc != 0:
        r["error"] = (err.strip() or "rc %d" % rc).splitlines()[-1][:300]
        return
    worst = 0.0
    for k in r["outputs"]:
        p = os.path.join(od, "%s.npy" % k)
        if k not in got and not os.path.exists(p):
            r["error"] = "no output %s" % k
            return
        want = np.load(os.path.join(rdir, style, "tf_%s.npy" % k))
        if want.dtype.kind == "V" and want.dtype.itemsize == 2:  # TF's bfloat16 (ml_dtypes), as float32
            want = (want.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        e, why = compare(got[k] if k in got else np.load(p), want)
        if why:
            r["error"] = "output %s: %s" % (k, why)
            r["mismatch"] = True
            return
        worst = max(worst, e)
    r["err"] = worst


def status(r):
    if "tf_error" in r:
        return "TF fails"
    if r.get("mismatch") or r.get("err", 0) > tol(r["key"]):
        return "MISMATCH"
    if "error" in r:
        return "FAIL"
    return "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--out", default="/tmp/k3/layers")
    ap.add_argument("--only", default="", help="class names or Class/variant keys, comma-separated")
    ap.add_argument("--styles", default=",".join(STYLES))
    ap.add_argument("--chunk", type=int, default=25, help="rows per TF process")
    ap.add_argument("--reuse", action="store_true", help="reuse exports and TF outputs already in --out")
    ap.add_argument("--list", action="store_true", help="print the row keys and exit")
    ap.add_argument("--policy", default="", help="a Keras dtype policy for every layer (mixed_float16, "
                    "mixed_bfloat16): rows are keyed KEY@POLICY and judged by MIXED_TOL")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args()
    if args.child:
        what, a = args.child[0], args.child[1:]
        res = child_list() if what == "list" else child_build(a[0].split(","), a[1], a[2].split(","),
                                                               a[3] if len(a) > 3 else "")
        print(json.dumps(res))
        return 0
    args.build = os.path.abspath(args.build)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    t0 = time.time()
    info, e = child(args.python, 600, "list")
    if info is None:
        sys.exit("sweep_layers: cannot list keras.layers: %s" % e)
    classes, excluded, keys = info["classes"], info["excluded"], info["keys"]
    built = {k.split("/")[0] for k in keys}
    missing = [c for c in sorted(classes) if c not in built and c not in excluded]
    if args.list:
        print("\n".join(keys))
        return 0
    want = [w.strip() for w in args.only.split(",") if w.strip()]
    keys = [k for k in keys if k.split("/")[0] in classes and
            (not want or k in want or k.split("/")[0] in want)]
    styles = [s for s in args.styles.split(",") if s]
    metas = {}
    todo = []
    for k in keys:
        meta = os.path.join(args.out, k.replace("/", "."), "meta.json")
        if args.reuse and os.path.exists(meta):
            with open(meta) as fh:
                m = json.load(fh)
            if all(s in m["styles"] for s in styles):
                metas[k] = m
                continue
        todo.append(k)
    for i in range(0, len(todo), args.chunk):
        part = todo[i:i + args.chunk]
        res, e = child(args.python, 3600, "build", ",".join(part), args.out, ",".join(styles), args.policy)
        if res is None:  # the chunk's process died: read back what it wrote, the rest is a row each
            for k in part:
                meta = os.path.join(args.out, k.replace("/", "."), "meta.json")
                if os.path.exists(meta):
                    with open(meta) as fh:
                        metas[k] = json.load(fh)
                else:
                    metas[k] = {"key": k, "styles": {s: {"tf_error": "build process: " + e} for s in styles}}
        else:
            metas.update({m["key"]: m for m in res})
    rows = []
    for k in keys:
        for s in styles:
            r = dict(metas[k]["styles"].get(s, {"tf_error": "not built"}))
            if "tf_error" not in r:
                ours(args, os.path.join(args.out, k.replace("/", ".")), s, r)
            row = dict(r, key=k + ("@" + args.policy if args.policy else ""), style=s)
            row["status"] = status(row)
            rows.append(row)
            print("%-40s %-6s %-9s %s" % (row["key"], s, row["status"],
                  ("err %.1e" % r["err"] if "err" in r else (r.get("error") or r.get("tf_error") or "")) +
                  ("  unsupported: " + ",".join(r["unsupported"]) if r.get("unsupported") else "")), flush=True)
    for c in missing:
        rows.append({"key": c, "style": "", "status": "FAIL", "error": "neither built nor excluded"})
        print("%-40s %-6s FAIL      neither built nor excluded: add a builder or an EXCLUDED reason" % (c, ""))
    n = {st: sum(r["status"] == st for r in rows) for st in ("ok", "MISMATCH", "FAIL", "TF fails")}
    summary = ("%d classes (%d excluded), %d rows x %d styles: %s; %.0f s" % (
        len(classes), len(excluded), len(keys), len(styles), ", ".join("%d %s" % (v, k) for k, v in n.items()),
        time.time() - t0))
    lines = [summary, "", "| layer / variant | style | status | max rel err | unsupported ops / error |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s |" % (
            r["key"], r["style"], r["status"], "%.1e" % r["err"] if "err" in r else "",
            (", ".join(r.get("unsupported") or []) + " " + (r.get("error") or r.get("tf_error") or ""))
            .strip().replace("|", "/")))
    print("\n".join(lines))
    if args.md:
        with open(args.md, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if n["FAIL"] == 0 and n["MISMATCH"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
