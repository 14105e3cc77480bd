"""The zoo's Keras layer builders (dense, activations, convolutions, pooling, batch norm, embedding,
residual, preprocessing, multi-input/output, Sequential): each writes one SavedModel and returns its
description for make_zoo.py (see the builder contract there)."""

from zoo_common import SEED, _how_text, _keras, _keras_out, _keras_version, _rng, _set_bn, _tf  # noqa: F401


def build_keras_mlp(model_dir):
    keras = _keras()
    import numpy as np
    m = keras.Sequential([
        keras.Input(shape=(6,), name="features"),
        keras.layers.Dense(8, activation="relu", name="d_relu"),
        keras.layers.Dense(8, activation="sigmoid", name="d_sigmoid"),
        keras.layers.Dense(6, activation="tanh", name="d_tanh"),
        keras.layers.Dense(4, activation="softmax", name="d_softmax"),
    ], name="mlp")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 6), "float32"))
    return {"style": style,
            "description": "Keras Sequential MLP on features[?,6]: Dense(8,relu), Dense(8,sigmoid), "
                           "Dense(6,tanh), Dense(4,softmax); " + _how_text("export") + "."}


def build_keras_activations(model_dir):
    keras = _keras()
    import numpy as np
    x = keras.Input(shape=(5,), name="x")
    h = keras.layers.Dense(5, name="dense")(x)
    outs = {
        "gelu_exact": keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=False),
                                              name="gelu_exact")(h),
        "gelu_approx": keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=True),
                                               name="gelu_approx")(h),
        "relu6": keras.layers.Activation("relu6", name="relu6")(h * 4.0),
        "leaky_relu": keras.layers.LeakyReLU(negative_slope=0.2, name="leaky_relu")(h),
        "elu": keras.layers.Activation("elu", name="elu")(h),
        "selu": keras.layers.Activation("selu", name="selu")(h),
        "silu": keras.layers.Activation("silu", name="silu")(h),
        "softmax": keras.layers.Softmax(name="softmax")(h),
        "hard_sigmoid": keras.layers.Activation("hard_sigmoid", name="hard_sigmoid")(h),
        "softsign": keras.layers.Activation("softsign", name="softsign")(h),
        "relu_max": keras.layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.05,
                                      name="relu_max")(h),
        "prelu": keras.layers.PReLU(alpha_initializer=keras.initializers.Constant(0.3), name="prelu")(h),
    }
    m = keras.Model(x, outs, name="activations")
    style = _keras_out(m, model_dir, "save", np.zeros((1, 5), "float32"))
    return {"style": style,
            "description": "Keras functional model x[?,5] -> Dense(5) -> one output per activation: "
                           "gelu exact (erf) and approximate (tanh), relu6, LeakyReLU(0.2), elu, selu, "
                           "silu, Softmax, hard_sigmoid, softsign, ReLU(max 1, slope 0.1, threshold "
                           "0.05), PReLU; " + _how_text("save") + "."}


def build_keras_conv(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(10, 10, 2), name="image")
    branches = [
        L.Conv2D(3, 3, padding="valid", name="valid")(x),
        L.Conv2D(3, 3, strides=2, padding="valid", activation="relu", name="valid_s2")(x),
        L.Conv2D(3, 3, padding="same", name="same")(x),
        L.Conv2D(3, (3, 2), strides=(2, 3), padding="same", name="same_s23")(x),
        L.Conv2D(3, 3, dilation_rate=2, padding="same", name="same_d2")(x),
        L.Conv2D(3, 2, dilation_rate=(2, 3), padding="valid", use_bias=False, name="valid_d23")(x),
        L.Conv2D(4, 1, name="pointwise")(x),
    ]
    pooled = [L.GlobalAveragePooling2D(name="gap_%d" % i)(b) for i, b in enumerate(branches)]
    m = keras.Model(x, {"pooled": L.Concatenate(name="concat")(pooled), "same_d2": branches[4],
                        "same_s23": branches[3], "valid_s2": branches[1]}, name="convs")
    style = _keras_out(m, model_dir, "save", np.zeros((1, 10, 10, 2), "float32"))
    return {"style": style,
            "description": "Keras functional convolutions on image[?,10,10,2]: Conv2D valid, valid "
                           "stride 2 + relu, same, same strides (2,3) kernel (3,2), same dilation 2, "
                           "valid dilation (2,3) no bias, 1x1; each GlobalAveragePooling2D, "
                           "Concatenate -> pooled; some branch outputs too; " + _how_text("save") + "."}


def build_keras_pooling(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(9, 9, 2), name="image"),
        L.MaxPooling2D(2, name="max_valid"),                                   # 4x4
        L.Conv2D(3, 1, activation="relu", name="conv"),
        L.AveragePooling2D(3, strides=1, padding="same", name="avg_same"),     # 4x4
        L.MaxPooling2D(3, strides=2, padding="same", name="max_same"),         # 2x2
        L.Flatten(name="flatten"),
        L.Reshape((3, 4), name="reshape"),
        L.AveragePooling1D(2, name="avg1d"),
        L.Flatten(name="flatten2"),
        L.Dense(2, name="out"),
    ], name="pooling")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 9, 9, 2), "float32"))
    return {"style": style,
            "description": "Keras Sequential pooling on image[?,9,9,2]: MaxPooling2D(2) valid, Conv2D 1x1 "
                           "relu, AveragePooling2D(3, strides 1, same), MaxPooling2D(3, strides 2, same), "
                           "Flatten, Reshape(3,4), AveragePooling1D(2), Flatten, Dense(2); "
                           + _how_text("export") + "."}


def build_keras_batchnorm(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    img = keras.Input(shape=(6, 6, 3), name="image")
    vec = keras.Input(shape=(4,), name="vec")
    c = L.Conv2D(4, 3, padding="same", use_bias=False, name="conv")(img)
    bn4 = L.BatchNormalization(name="bn_conv")(c)
    r = L.ReLU(name="relu")(bn4)
    g = L.GlobalAveragePooling2D(name="gap")(r)
    d = L.Dense(5, name="dense")(vec)
    bn2 = L.BatchNormalization(epsilon=0.01, center=False, name="bn_dense")(d)
    drop = L.Dropout(0.5, name="dropout")(bn2)
    out = L.Dense(3, name="head")(L.Concatenate(name="cat")([g, drop]))
    m = keras.Model({"image": img, "vec": vec}, {"out": out, "bn_conv": bn4}, name="bn")
    m({"image": np.zeros((1, 6, 6, 3), "float32"), "vec": np.zeros((1, 4), "float32")})
    rng = _rng(SEED + 1)
    _set_bn(m.get_layer("bn_conv"), rng)
    lay = m.get_layer("bn_dense")
    n = lay.moving_mean.shape[0]
    lay.set_weights([rng.uniform(0.5, 1.5, n).astype(np.float32),
                     rng.uniform(-1.0, 1.0, n).astype(np.float32), rng.uniform(0.5, 2.0, n).astype(np.float32)])
    _tf().saved_model.save(m, model_dir)
    return {"style": "tf2",
            "description": "Keras functional, two named inputs image[?,6,6,3] and vec[?,4]: Conv2D same "
                           "no bias -> BatchNormalization (4-D, FusedBatchNormV3 in inference) -> ReLU -> "
                           "GAP; Dense(5) -> BatchNormalization(epsilon 0.01, center=False) -> "
                           "Dropout(0.5) (identity at inference); Concatenate -> Dense(3). Moving "
                           "statistics set to non-trivial values; " + _how_text("save") + "."}


def build_keras_embedding(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(5,), dtype="int32", name="tokens"),
        L.Embedding(12, 4, name="embedding"),
        L.GlobalAveragePooling1D(name="gap1d"),
        L.Dense(3, activation="softmax", name="probs"),
    ], name="embed")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 5), "int32"))
    return {"style": style,
            "description": "Keras Sequential text classifier: tokens[?,5] int32 -> Embedding(12,4) -> "
                           "GlobalAveragePooling1D -> Dense(3, softmax); " + _how_text("export") + "."}


def build_keras_depthwise(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(8, 8, 3), name="image"),
        L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu", name="dw"),
        L.DepthwiseConv2D(3, strides=2, padding="valid", name="dw_s2"),
        L.SeparableConv2D(4, 2, padding="same", activation="relu6", name="sep"),
        L.SeparableConv2D(5, 2, dilation_rate=1, depth_multiplier=2, name="sep_dm2"),
        L.GlobalAveragePooling2D(name="gap"),
    ], name="depthwise")
    style = _keras_out(m, model_dir, "save", np.zeros((1, 8, 8, 3), "float32"))
    return {"style": style,
            "description": "Keras Sequential on image[?,8,8,3]: DepthwiseConv2D(3, multiplier 2, same, "
                           "relu), DepthwiseConv2D(3, strides 2, valid), SeparableConv2D(4, 2, same, "
                           "relu6), SeparableConv2D(5, 2, multiplier 2), GlobalAveragePooling2D; "
                           + _how_text("save") + "."}


def build_keras_residual(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(4, 6), name="seq")
    h = L.Dense(6, activation="gelu", name="ff1")(x)
    a = L.Add(name="add")([x, h])
    n1 = L.LayerNormalization(name="ln")(a)
    n2 = L.LayerNormalization(axis=[1, 2], epsilon=1e-3, name="ln_2axes")(a)
    cat = L.Concatenate(axis=-1, name="concat")([n1, n2])
    sub = L.Subtract(name="sub")([n1, n2])
    mul = L.Multiply(name="mul")([n1, sub])
    avg = L.Average(name="avg")([n1, n2, mul])
    mx = L.Maximum(name="max")([n1, n2])
    out = L.Dense(2, name="head")(L.Flatten(name="flat")(L.Concatenate(name="concat2")([cat, avg, mx])))
    m = keras.Model(x, out, name="residual")
    m(np.zeros((1, 4, 6), "float32"))
    rng = _rng(SEED + 2)
    for lay in (m.get_layer("ln"), m.get_layer("ln_2axes")):  # non-trivial gamma/beta
        lay.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(np.float32) if i == 0 else
                         rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                         for i, w in enumerate(lay.get_weights())])
    m.export(model_dir)
    return {"style": "keras3",
            "description": "Keras functional residual block on seq[?,4,6]: Dense(6, gelu), Add, "
                           "LayerNormalization (last axis) and over axes [1,2] (epsilon 1e-3), "
                           "Concatenate, Subtract, Multiply, Average, Maximum, Flatten, Dense(2); "
                           + _how_text("export") + "."}


def build_keras_preprocessing(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    img = keras.Input(shape=(4, 4, 3), name="pixels")
    num = keras.Input(shape=(3,), name="numeric")
    r = L.Rescaling(1.0 / 255, offset=-0.5, name="rescale")(img)
    g = L.GlobalAveragePooling2D(name="gap")(r)
    nrm = L.Normalization(mean=[1.0, -2.0, 10.0], variance=[4.0, 0.25, 100.0], name="normalize")(num)
    out = L.Dense(2, name="head")(L.Concatenate(name="cat")([g, nrm]))
    m = keras.Model({"pixels": img, "numeric": num}, {"out": out, "normalized": nrm, "rescaled": r},
                    name="prep")
    m({"pixels": np.zeros((1, 4, 4, 3), "float32"), "numeric": np.zeros((1, 3), "float32")})
    m.export(model_dir)
    return {"style": "keras3",
            "description": "Keras functional preprocessing: pixels[?,4,4,3] -> Rescaling(1/255, offset "
                           "-0.5) -> GAP; numeric[?,3] -> Normalization(mean, variance given); "
                           "Concatenate -> Dense(2); outputs out, normalized, rescaled; "
                           + _how_text("export") + "."}


def build_keras_multi_io(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    a = keras.Input(shape=(3,), name="left")
    b = keras.Input(shape=(2,), name="right")
    ids = keras.Input(shape=(1,), dtype="int64", name="ids")
    e = L.Flatten(name="flat")(L.Embedding(10, 2, name="emb")(ids))
    h = L.Dense(4, activation="tanh", name="h")(L.Concatenate(name="cat")([a, b, e]))
    # A list of inputs, not a dict: saved_model_cli prints a dict of input specs in protobuf map
    # order, which is not stable from one export to the next.
    m = keras.Model([a, b, ids],
                    {"score": L.Dense(1, activation="sigmoid", name="score")(h),
                     "logits": L.Dense(3, name="logits")(h)}, name="multi_io")
    m([np.zeros((1, 3), "float32"), np.zeros((1, 2), "float32"), np.zeros((1, 1), "int64")])
    m.export(model_dir)
    return {"style": "keras3",
            "description": "Keras functional with three named inputs left[?,3], right[?,2], ids[?,1] "
                           "int64 (Embedding(10,2)) and two outputs score (sigmoid) and logits; "
                           + _how_text("export") + "."}


def build_keras_seed_cnn(model_dir):
    """The CNN of seed 000 at its real size (28x28x1, ~1.4 MB of float32 weights, random)."""
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        L.Conv2D(32, (3, 3), activation="relu"),
        L.MaxPooling2D((2, 2)),
        L.Flatten(),
        L.Dense(64, activation="relu"),
        L.Dense(10),
    ])
    m(np.zeros((1, 28, 28, 1), "float32"))
    _tf().saved_model.save(m, model_dir, signatures=None, options=None)
    return {"style": "tf2",
            "description": "The seed's CNN at full size: Conv2D(32,(3,3),relu) on 28x28x1, "
                           "MaxPooling2D((2,2)), Flatten, Dense(64,relu), Dense(10) (225,034 float32 "
                           "weights, random), saved like the seed with tf.saved_model.save(model, path, "
                           "signatures=None, options=None) (Keras %s). The runtime benchmark's model."
                           % _keras_version()}


def build_keras_seq_saved(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(6, 6, 2), name="image"),
        L.Conv2D(4, 3, strides=(1, 2), padding="same", activation="sigmoid", name="conv"),
        L.Dropout(0.3, name="drop"),
        L.BatchNormalization(name="bn"),
        L.MaxPooling2D((2, 1), name="pool"),
        L.Flatten(name="flatten"),
        L.Dense(3, activation="tanh", name="dense"),
        L.Reshape((3, 1), name="reshape"),
        L.Flatten(name="flatten2"),
        L.Softmax(name="softmax"),
    ], name="seq_saved")
    m(np.zeros((1, 6, 6, 2), "float32"))
    _set_bn(m.get_layer("bn"), _rng(SEED + 3))
    _tf().saved_model.save(m, model_dir)
    return {"style": "tf2",
            "description": "Keras Sequential saved with tf.saved_model.save: Conv2D(4,3, strides (1,2), "
                           "same, sigmoid), Dropout, BatchNormalization, MaxPooling2D((2,1)), Flatten, "
                           "Dense(3,tanh), Reshape, Flatten, Softmax (Keras %s)." % _keras_version()}

KERAS_BUILDERS = {
    "keras_mlp": build_keras_mlp,
    "keras_activations": build_keras_activations,
    "keras_conv": build_keras_conv,
    "keras_pooling": build_keras_pooling,
    "keras_batchnorm": build_keras_batchnorm,
    "keras_embedding": build_keras_embedding,
    "keras_depthwise": build_keras_depthwise,
    "keras_residual": build_keras_residual,
    "keras_preprocessing": build_keras_preprocessing,
    "keras_multi_io": build_keras_multi_io,
    "keras_seed_cnn": build_keras_seed_cnn,
    "keras_seq_saved": build_keras_seq_saved,
}
