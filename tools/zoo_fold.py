"""The zoo's BatchNorm-folding builders (src/ops/nn_fold.c): Keras 3 Conv2D + BatchNormalization chains
exported as the Mul/Add decomposition the rule folds, with a signature that assigns the BatchNorm
variables so that a sequence checks the fold follows them (a folded filter cached at load would be
stale), and chains that must not fold (an intermediate fetched; an activation added after a scaled
conv, InceptionResNetV2's residual block). See make_zoo.py for the builder contract."""

from zoo_common import SEED, _keras, _rng, _set_bn, _tf


def build_keras_bn_fold(model_dir):
    keras = _keras()
    tf = _tf()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(7, 7, 3), name="x")
    a = L.Conv2D(8, 3, padding="same", name="conv_a")(x)                    # bias, BN, Relu
    a = L.Activation("relu", name="relu_a")(L.BatchNormalization(name="bn_a")(a))
    b = L.Conv2D(6, 3, strides=2, use_bias=False, name="conv_b")(a)        # no bias, BN, Relu6
    b = L.Activation("relu6", name="relu6_b")(L.BatchNormalization(epsilon=0.01, name="bn_b")(b))
    c = L.Conv2D(5, 1, name="conv_c")(b)                                    # BN, no activation
    c = L.BatchNormalization(name="bn_c")(c)
    pre = L.Conv2D(4, 3, padding="same", name="conv_d")(c)                  # fetched before the BN: not folded
    d = L.Activation("relu", name="relu_d")(L.BatchNormalization(name="bn_d")(pre))
    model = keras.Model(x, {"c": c, "pre_d": pre, "d": d}, name="bn_fold")
    model(np.zeros((1, 7, 7, 3), "float32"))
    rng = _rng(SEED + 7)
    for name in ("bn_a", "bn_b", "bn_c", "bn_d"):
        _set_bn(model.get_layer(name), rng)
    bn_a = model.get_layer("bn_a")

    class M(tf.Module):
        def __init__(self):
            super().__init__(name="bn_fold")
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([None, 7, 7, 3], tf.float32, name="x")])
        def serve(self, x):
            return self.model(x, training=False)

        @tf.function(input_signature=[tf.TensorSpec([8], tf.float32, name="gamma"),
                                      tf.TensorSpec([8], tf.float32, name="mean")])
        def set_bn(self, gamma, mean):
            bn_a.gamma.assign(gamma)
            bn_a.moving_mean.assign(mean)
            return {"gamma": tf.identity(bn_a.gamma.value), "mean": tf.identity(bn_a.moving_mean.value)}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.serve, "set_bn": m.set_bn})
    xs = rng.uniform(-1, 1, (2, 7, 7, 3)).astype(np.float32)
    g2 = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    m2 = rng.uniform(-1, 1, 8).astype(np.float32)
    return {"style": "tf2",
            "description": "Keras 3 Conv2D + BatchNormalization (inference: Mul/AddV2 of gamma*rsqrt(var+eps) "
                           "and beta-mean*scale) chains, x[?,7,7,3]: conv_a bias+BN+relu, conv_b stride 2 no "
                           "bias+BN(eps 0.01)+relu6, conv_c 1x1+BN (output c), conv_d+BN+relu whose conv output "
                           "is fetched too (pre_d: must not fold); BN statistics random. set_bn(gamma[8], mean[8]) "
                           "assigns bn_a's variables; the sequence runs serve, set_bn, serve on one model, so a "
                           "folded filter must follow the assignment.",
            "inputs": {"serving_default": {"x": xs}, "set_bn": {"gamma": g2, "mean": m2}},
            "sequences": {"serve": [("serving_default", {"x": xs}), ("set_bn", {"gamma": g2, "mean": m2}),
                                    ("serving_default", {"x": xs})]}}


def build_tf2_fused_bn_fold(model_dir):
    tf = _tf()
    import numpy as np
    rng = _rng(SEED + 8)

    def var(shape, lo, hi, name):
        return tf.Variable(rng.uniform(lo, hi, shape).astype(np.float32), name=name)

    class M(tf.Module):
        def __init__(self):
            super().__init__(name="fused_bn_fold")
            self.f1, self.b1 = var([3, 3, 3, 6], -0.5, 0.5, "f1"), var([6], -0.5, 0.5, "b1")
            self.f2, self.f3 = var([1, 1, 6, 4], -0.5, 0.5, "f2"), var([3, 3, 6, 4], -0.5, 0.5, "f3")
            self.bn = [[var([c], 0.5, 1.5, "gamma%d" % i), var([c], -0.5, 0.5, "beta%d" % i),
                        var([c], -1.0, 1.0, "mean%d" % i), var([c], 0.5, 2.0, "var%d" % i)]
                       for i, c in enumerate((6, 4, 4))]

        def fbn(self, x, i, eps):
            g, b, m, v = self.bn[i]
            return tf.compat.v1.nn.fused_batch_norm(x, g, b, mean=m, variance=v, epsilon=eps, is_training=False)

        @tf.function(input_signature=[tf.TensorSpec([None, 6, 6, 3], tf.float32, name="x")])
        def serve(self, x):
            h = tf.nn.bias_add(tf.nn.conv2d(x, self.f1, 1, "SAME"), self.b1)
            h = tf.nn.relu(self.fbn(h, 0, 0.001)[0])                        # conv+bias+FBN+relu
            y2 = self.fbn(tf.nn.conv2d(h, self.f2, 2, "VALID"), 1, 0.01)[0]   # conv+FBN, FBN last
            y3, mean3, _ = self.fbn(tf.nn.conv2d(h, self.f3, 1, "SAME"), 2, 0.001)  # statistics read
            return {"y2": y2, "y3": tf.nn.relu6(y3), "mean3": mean3}

        @tf.function(input_signature=[tf.TensorSpec([6], tf.float32, name="var"),
                                      tf.TensorSpec([6], tf.float32, name="beta")])
        def set_bn(self, v, b):
            self.bn[0][3].assign(v)
            self.bn[0][1].assign(b)
            return {"var": tf.identity(self.bn[0][3].value()), "beta": tf.identity(self.bn[0][1].value())}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.serve, "set_bn": m.set_bn})
    xs = rng.uniform(-1, 1, (2, 6, 6, 3)).astype(np.float32)
    v2 = rng.uniform(0.2, 3.0, 6).astype(np.float32)
    b2 = rng.uniform(-1, 1, 6).astype(np.float32)
    return {"style": "tf2",
            "description": "tf.function with tf.compat.v1.nn.fused_batch_norm(is_training=False) "
                           "(FusedBatchNormV3) after tf.nn.conv2d, x[?,6,6,3]: conv+bias_add+FBN(eps 1e-3)+relu; "
                           "1x1 stride-2 conv+FBN(eps 1e-2) with nothing after (y2); conv+FBN+relu6 whose batch "
                           "mean output is returned too (mean3: that one must not fold). set_bn(var[6], beta[6]) "
                           "assigns the first BatchNorm's variance and offset; the sequence runs serve, set_bn, "
                           "serve on one model.",
            "inputs": {"serving_default": {"x": xs}, "set_bn": {"var": v2, "beta": b2}},
            "sequences": {"serve": [("serving_default", {"x": xs}), ("set_bn", {"var": v2, "beta": b2}),
                                    ("serving_default", {"x": xs})]}}


def build_tf2_bn_fold_edge(model_dir):
    """Two serving signatures over the same BatchNorm variables (their plans share the folds), one
    BatchNorm with epsilon 0, and a set_bn that assigns degenerate variances."""
    tf = _tf()
    import numpy as np
    rng = _rng(SEED + 9)

    def var(shape, lo, hi, name):
        return tf.Variable(rng.uniform(lo, hi, shape).astype(np.float32), name=name)

    class M(tf.Module):
        def __init__(self):
            super().__init__(name="bn_fold_edge")
            self.f1, self.b1 = var([3, 3, 3, 17], -0.5, 0.5, "f1"), var([17], -0.5, 0.5, "b1")
            self.fd, self.f2 = var([3, 3, 17, 1], -0.5, 0.5, "fd"), var([1, 1, 17, 5], -0.5, 0.5, "f2")
            self.bn = [[var([c], 0.5, 1.5, "gamma%d" % i), var([c], -0.5, 0.5, "beta%d" % i),
                        var([c], -1.0, 1.0, "mean%d" % i), var([c], 0.5, 2.0, "var%d" % i)]
                       for i, c in enumerate((17, 17, 5))]

        def fbn(self, x, i, eps):
            g, b, m, v = self.bn[i]
            return tf.compat.v1.nn.fused_batch_norm(x, g, b, mean=m, variance=v, epsilon=eps, is_training=False)[0]

        def trunk(self, x):
            h = tf.nn.relu(self.fbn(tf.nn.bias_add(tf.nn.conv2d(x, self.f1, 1, "SAME"), self.b1), 0, 0.0))
            y = tf.nn.relu6(self.fbn(tf.nn.depthwise_conv2d(h, self.fd, [1, 2, 2, 1], "SAME"), 1, 0.001))
            return h, y, self.fbn(tf.nn.conv2d(h, self.f2, 1, "VALID"), 2, 0.001)

        @tf.function(input_signature=[tf.TensorSpec([None, 7, 5, 3], tf.float32, name="x")])
        def serve(self, x):
            return {"y": self.trunk(x)[1]}

        @tf.function(input_signature=[tf.TensorSpec([None, 7, 5, 3], tf.float32, name="x")])
        def features(self, x):
            h, y, z = self.trunk(x)
            return {"h": h, "y": y, "z": z}

        @tf.function(input_signature=[tf.TensorSpec([17], tf.float32, name="var0"),
                                      tf.TensorSpec([17], tf.float32, name="var1"),
                                      tf.TensorSpec([5], tf.float32, name="var2")])
        def set_bn(self, v0, v1, v2):
            for i, v in enumerate((v0, v1, v2)):
                self.bn[i][3].assign(v)
            return {"var%d" % i: tf.identity(self.bn[i][3].value()) for i in range(3)}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.serve, "features": m.features,
                                                  "set_bn": m.set_bn})
    xs = rng.uniform(-1, 1, (3, 7, 5, 3)).astype(np.float32)
    v0 = rng.uniform(0.5, 2.0, 17).astype(np.float32)
    v1 = rng.uniform(0.5, 2.0, 17).astype(np.float32)
    v2 = rng.uniform(0.5, 2.0, 5).astype(np.float32)
    v0[[0, 5, 16]] = [1e-30, 1e-20, 1e-37]  # epsilon 0: scales of 1e10 .. 3e18 (1e-38, a denormal, is 0 to TF: FTZ)
    v1[[2, 16]] = 0.0                       # epsilon alone
    v1[[3]] = -0.0009                       # variance + epsilon 1e-4
    v2[[1, 4]] = [-5.0, -1.0]               # negative: TF's scale is NaN (no activation after)
    v2[[2]] = -0.0005
    return {"style": "tf2",
            "description": "tf.function, FusedBatchNormV3 (inference) after conv+bias_add (epsilon 0, then relu), "
                           "after a 3x3 stride-2 depthwise (epsilon 1e-3, then relu6) and after a 1x1 conv (epsilon "
                           "1e-3, nothing after), x[?,7,5,3], 17 channels; serving_default (y) and features (h, y, "
                           "z) run the same chains (shared folds). set_bn(var0[17], var1[17], var2[5]) assigns the "
                           "variances; the sequence runs both, assigns tiny variances with epsilon 0 (scales up to "
                           "3e18), variance 0 and -0.9 epsilon, and negative variances where nothing follows (NaN), "
                           "then runs both again.",
            "inputs": {"serving_default": {"x": xs}, "features": {"x": xs},
                       "set_bn": {"var0": v0, "var1": v1, "var2": v2}},
            "sequences": {"serve": [("serving_default", {"x": xs}), ("features", {"x": xs}),
                                    ("set_bn", {"var0": v0, "var1": v1, "var2": v2}), ("serving_default", {"x": xs}),
                                    ("features", {"x": xs})]}}


def build_tf2_bn_fold_shared_filter(model_dir):
    """One conv filter and one depthwise filter under different BatchNorms (or epsilons) in three
    signatures: the folds shared between plans must key on the BatchNorm too, not the filter alone."""
    tf = _tf()
    import numpy as np
    rng = _rng(SEED + 10)

    def var(*shape):
        return tf.Variable(rng.uniform(0.5, 1.5, shape).astype(np.float32))

    class M(tf.Module):
        def __init__(self):
            super().__init__(name="bn_fold_shared_filter")
            self.f = tf.Variable(rng.uniform(-1, 1, [3, 3, 3, 6]).astype(np.float32))
            self.fd = tf.Variable(rng.uniform(-1, 1, [3, 3, 3, 1]).astype(np.float32))
            self.bn = [[var(6) for _ in range(4)] for _ in range(2)]
            self.bd = [[var(3) for _ in range(4)] for _ in range(2)]

        def chain(self, x, i, eps, dw):
            g, b, m, v = (self.bd if dw else self.bn)[i]
            c = tf.nn.depthwise_conv2d(x, self.fd, [1, 1, 1, 1], "SAME") if dw else tf.nn.conv2d(x, self.f, 1, "SAME")
            y = tf.compat.v1.nn.fused_batch_norm(c, g, b, mean=m, variance=v, epsilon=eps, is_training=False)[0]
            return tf.nn.relu(y)

        def both(self, x, i, eps):
            return {"y": self.chain(x, i, eps, False), "d": self.chain(x, i, eps, True)}

        @tf.function(input_signature=[tf.TensorSpec([None, 5, 7, 3], tf.float32, name="x")])
        def a(self, x):
            return self.both(x, 0, 0.001)

        @tf.function(input_signature=[tf.TensorSpec([None, 5, 7, 3], tf.float32, name="x")])
        def b(self, x):
            return self.both(x, 1, 0.001)

        @tf.function(input_signature=[tf.TensorSpec([None, 5, 7, 3], tf.float32, name="x")])
        def c(self, x):
            return self.both(x, 0, 0.5)

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.a, "other_bn": m.b, "other_eps": m.c})
    xs = rng.uniform(-1, 1, (2, 5, 7, 3)).astype(np.float32)
    return {"style": "tf2",
            "description": "tf.function: one conv filter [3,3,3,6] and one depthwise filter [3,3,3,1], each "
                           "followed by FusedBatchNormV3 (inference) + relu, in three signatures: serving_default "
                           "(BatchNorms 0, epsilon 1e-3), other_bn (BatchNorms 1), other_eps (BatchNorms 0, epsilon "
                           "0.5). The sequence runs the three and serving_default again on one model.",
            "inputs": {k: {"x": xs} for k in ("serving_default", "other_bn", "other_eps")},
            "sequences": {"serve": [(k, {"x": xs}) for k in ("serving_default", "other_bn", "other_eps",
                                                              "serving_default")]}}
def build_tf2_scaled_residual(model_dir):
    """InceptionResNetV2's residual block (keras.applications: x + conv(branches(x)) * scale, its
    CustomScaleLayer) as a tf.function: the Mul/Add after the conv are no BatchNorm (the addend
    is an activation) and must not fold; the gate form scales a conv by an activation."""
    tf = _tf()
    import numpy as np
    rng = _rng(SEED + 16)

    def var(shape, name):
        return tf.Variable(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name=name)

    class M(tf.Module):
        def __init__(self):
            super().__init__(name="scaled_residual")
            self.f0, self.b0 = var([3, 3, 3, 4], "f0"), var([4], "b0")
            self.f1, self.b1 = var([1, 1, 4, 4], "f1"), var([4], "b1")
            self.f2, self.b2 = var([3, 3, 4, 4], "f2"), var([4], "b2")

        @tf.function(input_signature=[tf.TensorSpec([None, 5, 5, 3], tf.float32, name="x")])
        def serve(self, x):
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, self.f0, 1, "SAME"), self.b0))
            up = tf.nn.bias_add(tf.nn.conv2d(h, self.f1, 1, "SAME"), self.b1)
            y = tf.nn.relu(h + up * 0.17)                                     # block35's residual
            gate = tf.nn.bias_add(tf.nn.conv2d(h, self.f2, 1, "SAME"), self.b2) * tf.sigmoid(h)
            return {"y": y, "gate": gate}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.serve})
    xs = rng.uniform(-1, 1, (2, 5, 5, 3)).astype(np.float32)
    return {"style": "tf2",
            "description": "tf.function on x[?,5,5,3]: h = relu(conv3x3+bias); y = relu(h + (conv1x1(h)+bias) "
                           "* 0.17), InceptionResNetV2's residual block (the Mul/AddV2 after the conv are no "
                           "BatchNorm: the addend is an activation); gate = (conv3x3(h)+bias) * sigmoid(h).",
            "inputs": {"serving_default": {"x": xs}}}


FOLD_BUILDERS = {
    "tf2_scaled_residual": build_tf2_scaled_residual,
    "keras_bn_fold": build_keras_bn_fold,
    "tf2_fused_bn_fold": build_tf2_fused_bn_fold,
    "tf2_bn_fold_edge": build_tf2_bn_fold_edge,
    "tf2_bn_fold_shared_filter": build_tf2_bn_fold_shared_filter,
}
