"""The zoo's builders for what tools/sweep_layers.py (the keras.layers sweep, both save styles) found
failing here, one fixture per fix (see make_zoo.py for the builder contract):
  keras_conv3d_ncdhw   Conv3D(data_format="channels_first"): TF's default (oneDNN) CPU build runs the
                       NCDHW Conv3D node Keras writes; src/ops/nn_conv_transpose.c used to refuse it.
  keras_mixed_float16  layers under Keras's mixed precision policies (half / bfloat16 MatMul, Conv2D,
                       Einsum, BiasAdd, MaxPool, TopKV2, Cumsum, bfloat16 Range): src/ops/nn_half.c, scatter.c's TopKV2,
                       math_scan.c, array_shape.c's Range widens them to float as TF's CPU
                       does (the rows TF computes to the bit; AvgPool and depthwise differ by an ulp)."""

from zoo_common import SEED, _how_text, _keras, _keras_out, _rng  # noqa: F401


def build_keras_conv3d_ncdhw(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(3, 4, 5, 4), name="vol")  # channels_first: C=3, D=4, H=5, W=4
    a = L.Conv3D(2, 2, strides=(1, 2, 1), padding="same", data_format="channels_first", name="same_s121")(x)
    b = L.Conv3D(2, (2, 1, 2), dilation_rate=(1, 2, 1), activation="relu", data_format="channels_first",
                 name="valid_d121")(x)
    m = keras.Model(x, {"same_s121": a, "valid_d121": b}, name="conv3d_ncdhw")
    rng = _rng(SEED + 31)
    for w in m.weights:
        w.assign(rng.standard_normal(tuple(w.shape)).astype("float32") * 0.5)
    style = _keras_out(m, model_dir, "export", np.zeros((1, 3, 4, 5, 4), "float32"))
    xs = rng.standard_normal((2, 3, 4, 5, 4)).astype(np.float32)
    return {"style": style,
            "description": "Keras Conv3D with data_format channels_first (NCDHW Conv3D nodes) on vol[?,3,4,5,4]: "
                           "2 filters 2x2x2 stride (1,2,1) SAME; 2 filters (2,1,2) dilation (1,2,1) VALID + relu; "
                           "random weights; " + _how_text("export") + ".",
            "inputs": {"serving_default": {"vol": xs}}}


def build_keras_mixed_float16(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    img = keras.Input(shape=(5, 5, 2), name="img")
    seq = keras.Input(shape=(3, 4), name="seq")
    c = L.Conv2D(3, 3, padding="same", dtype="mixed_float16", name="conv_f16")(img)
    cb = L.Conv2D(2, 2, dtype="mixed_bfloat16", name="conv_bf16")(img)
    p = L.MaxPooling2D(2, padding="same", dtype="mixed_float16", name="pool_f16")(c)
    d = L.Dense(3, activation="relu", dtype="mixed_float16", name="dense_f16")(seq)
    e = L.EinsumDense("abc,cd->abd", (3, 2), bias_axes="d", dtype="mixed_float16", name="einsum_f16")(d)
    K = keras.ops
    srt = L.Lambda(lambda t: K.concatenate([K.top_k(t, 2)[0], K.sort(t), K.top_k(t, 1)[0],
                                            K.cumsum(t * 7.0, axis=1), K.cumprod(t, axis=-1)], axis=-1),
                   dtype="mixed_float16", name="sort_f16")(seq)  # TopKV2 (k < n, k == n, k == 1), Cumsum, Cumprod
    rng_bf16 = L.Lambda(lambda t: t[:, 0, :1] * 0.0 + K.reshape(K.arange(0.1, 2.3, 0.3, dtype="bfloat16"), (1, -1)),
                        dtype="mixed_bfloat16", name="range_bf16")(seq)  # Range on bfloat16
    f32 = lambda n: L.Activation("linear", dtype="float32", name=n)  # noqa: E731 - Keras's float32 outputs
    m = keras.Model([img, seq], {"conv_f16": f32("out_conv_f16")(c), "conv_bf16": f32("out_conv_bf16")(cb),
                                 "dense_einsum_f16": f32("out_einsum_f16")(e), "pool_f16": f32("out_pool_f16")(p),
                                 "sort_f16": f32("out_sort_f16")(srt), "range_bf16": f32("out_range_bf16")(rng_bf16)},
                    name="mixed_precision")
    rng = _rng(SEED + 32)
    for w in m.weights:
        w.assign(rng.standard_normal(tuple(w.shape)).astype("float32") * 0.5)
    style = _keras_out(m, model_dir, "save", [np.zeros((1, 5, 5, 2), "float32"), np.zeros((1, 3, 4), "float32")])
    return {"style": style,
            "description": "Keras layers under mixed precision dtype policies (half / bfloat16 compute, float32 "
                           "variables and outputs): img[?,5,5,2] -> Conv2D(3, 3, same, mixed_float16) [-> "
                           "MaxPooling2D(2, same, mixed_float16)] and "
                           "Conv2D(2, 2, mixed_bfloat16); seq[?,3,4] -> Dense(3, relu, mixed_float16) -> "
                           "EinsumDense(abc,cd->abd, bias d, mixed_float16), and a mixed_float16 Lambda of "
                           "keras.ops.top_k(k=2), sort, top_k(k=1) (TopKV2 on half), cumsum, cumprod (half partial results), and a mixed_bfloat16 Lambda of keras.ops.arange(0.1, 2.3, 0.3, bfloat16) (Range); each cast to float32; random "
                           "weights; " + _how_text("save") + ".",
            "inputs": {"serving_default": {"inputs": rng.standard_normal((2, 5, 5, 2)).astype(np.float32),
                                           "inputs_1": rng.standard_normal((2, 3, 4)).astype(np.float32)}}}


LAYER_BUILDERS = {
    "keras_conv3d_ncdhw": build_keras_conv3d_ncdhw,
    "keras_mixed_float16": build_keras_mixed_float16,
}
