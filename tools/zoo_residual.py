"""The zoo's residual-convolution builders (issue #15: src/ops/nn_fuse.c's residual Add rule, nn_fold.c,
nn_conv.c's conv_add, oneDNN's sum post-op in nn_dnnl.c): Keras 3 blocks shaped like ResNet50's
(Conv2D + BatchNormalization, then Add with the shortcut, then ReLU; an identity and a projection
shortcut) and MobileNetV2's inverted residual (expand, depthwise, project + BN, then Add with no
activation), with patches of more than 32 elements (the 3x3 convs and the 1x1 projection from 48 channels) so that oneDNN runs those where present, the other 1x1 ones on the kernels' own loops. See
make_zoo.py for the builder contract."""

from zoo_common import SEED, _keras, _rng, _set_bn


def build_keras_conv_residual(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(6, 6, 8), name="x")
    # ResNet identity block: conv-BN-relu, conv-BN, Add(shortcut, .), relu
    h = L.Activation("relu", name="id_relu1")(L.BatchNormalization(name="id_bn1")(
        L.Conv2D(8, 3, padding="same", name="id_conv1")(x)))
    h = L.BatchNormalization(name="id_bn2")(L.Conv2D(8, 3, padding="same", name="id_conv2")(h))
    a = L.Activation("relu", name="id_out")(L.Add(name="id_add")([x, h]))
    # ResNet projection block (stride 2): the shortcut is a 1x1 conv + BN too
    s = L.BatchNormalization(name="pr_bn0")(L.Conv2D(16, 1, strides=2, name="pr_conv0")(a))
    h = L.Activation("relu", name="pr_relu1")(L.BatchNormalization(name="pr_bn1")(
        L.Conv2D(16, 3, strides=2, padding="same", name="pr_conv1")(a)))
    h = L.BatchNormalization(name="pr_bn2")(L.Conv2D(16, 3, padding="same", use_bias=False, name="pr_conv2")(h))
    b = L.Activation("relu", name="pr_out")(L.Add(name="pr_add")([s, h]))
    # MobileNetV2 inverted residual: expand 1x1 + BN + relu6, depthwise 3x3 + BN + relu6, project 1x1 + BN, Add
    h = L.ReLU(6.0, name="mb_relu1")(L.BatchNormalization(name="mb_bn1")(
        L.Conv2D(48, 1, use_bias=False, name="mb_expand")(b)))
    h = L.ReLU(6.0, name="mb_relu2")(L.BatchNormalization(name="mb_bn2")(
        L.DepthwiseConv2D(3, padding="same", use_bias=False, name="mb_dw")(h)))
    h = L.BatchNormalization(name="mb_bn3")(L.Conv2D(16, 1, use_bias=False, name="mb_project")(h))
    c = L.Add(name="mb_add")([b, h])
    model = keras.Model(x, {"identity": a, "projection": b, "inverted": c}, name="conv_residual")
    model(np.zeros((1, 6, 6, 8), "float32"))
    rng = _rng(SEED + 15)
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            _set_bn(layer, rng)
    model.export(model_dir)
    xs = rng.uniform(-1, 1, (2, 6, 6, 8)).astype(np.float32)
    return {"style": "keras3",
            "description": "Keras 3 residual conv blocks on x[?,6,6,8], BN statistics random: a ResNet identity "
                           "block (3x3 conv+BN+relu, 3x3 conv+BN, Add with x, relu; output identity), a stride-2 "
                           "projection block (shortcut 1x1/2 conv+BN; 3x3/2 conv+BN+relu, 3x3 conv without bias+BN; "
                           "Add, relu; output projection) and a MobileNetV2 inverted residual (1x1 expand to 48+BN+"
                           "relu6, depthwise 3x3+BN+relu6, 1x1 project+BN, Add with no activation; output inverted).",
            "inputs": {"serving_default": {"x": xs}}}


RESIDUAL_BUILDERS = {
    "keras_conv_residual": build_keras_conv_residual,
}
