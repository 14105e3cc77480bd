"""The zoo's Transformer builders (src/ops/nn_fuse_norm.c, the BatchMatMul / Einsum paths of
nn_matmul.c and einsum.c): a small BERT-like encoder block of Keras 3 layers whose LayerNorm and
erf-GELU chains the plan-time rules fuse, plus chains that must not fuse (an intermediate fetched)
and LayerNorm variants the kernel must handle (two trailing axes). See make_zoo.py for the builder
contract."""

from zoo_common import SEED, _keras, _rng


def build_keras_transformer_block(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    keras.utils.set_random_seed(SEED + 31)

    def gelu(v):  # BERT's erf GELU
        return 0.5 * v * (1.0 + keras.ops.erf(v * 0.7071067811865476))

    x = keras.Input(shape=(6, 16), name="x")
    a = L.MultiHeadAttention(num_heads=2, key_dim=8, name="mha")(x, x)
    h = L.LayerNormalization(epsilon=1e-6, name="ln_1")(L.Add(name="res_1")([x, a]))
    f = L.Dense(32, activation=gelu, name="ffn_1")(h)
    f = L.Dense(16, name="ffn_2")(f)
    y = L.LayerNormalization(epsilon=1e-12, name="ln_2")(L.Add(name="res_2")([h, f]))
    y2 = L.LayerNormalization(axis=[1, 2], epsilon=1e-3, name="ln_2axes")(y)  # two trailing axes
    pre = L.Dense(8, name="pre_gelu")(y)                                       # fetched: not fused
    g = L.Activation(gelu, name="gelu_fetched")(pre)
    model = keras.Model(x, {"y": y, "y2": y2, "pre": pre, "g": g}, name="transformer_block")
    model(np.zeros((1, 6, 16), "float32"))
    rng = _rng(SEED + 31)
    for name in ("ln_1", "ln_2", "ln_2axes"):  # gamma/beta away from 1/0, so a swapped one shows
        layer = model.get_layer(name)
        gm, bt = layer.get_weights()
        layer.set_weights([rng.uniform(0.5, 1.5, gm.shape).astype("float32"),
                           rng.uniform(-0.5, 0.5, bt.shape).astype("float32")])
    model.export(model_dir)
    xs = rng.normal(0, 1, (3, 6, 16)).astype(np.float32)
    return {"style": "keras3",
            "description": "Keras 3 encoder block, x[?,6,16]: MultiHeadAttention (2 heads, key_dim 8: "
                           "BatchMatMulV2 projections, Einsum scores), Add + LayerNormalization (eps 1e-6), "
                           "Dense(32, erf GELU) + Dense(16), Add + LayerNormalization (eps 1e-12) -> y; "
                           "LayerNormalization over axes [1,2] of y -> y2; Dense(8) fetched (pre) before an "
                           "erf GELU (g): that GELU reads a fetched value, its BiasAdd must not fuse. "
                           "LayerNorm gamma/beta random.",
            "inputs": {"serving_default": {"x": xs}}}


TRANSFORMER_BUILDERS = {
    "keras_transformer_block": build_keras_transformer_block,
}
