#!/usr/bin/env python3
"""gen_e1_models.py - writes tests/fixtures/train_sig/: a SavedModel whose `train` signature computes
gradients (TensorFlow's on-device training pattern: tf.GradientTape in a tf.function, a plain SGD
update var.assign_sub(lr * g), the loss returned), and TF's answers for three successive calls.

The model: an MLP of 4 -> 6 -> ... -> 1 whose hidden layers use relu, relu6, elu, selu, leaky_relu,
sigmoid, tanh, softplus and softsign in turn, so the train function holds ReluGrad, Relu6Grad,
EluGrad, SeluGrad, LeakyReluGrad, SigmoidGrad, TanhGrad, SoftplusGrad and SoftsignGrad (plus
BiasAddGrad from tf.nn.bias_add). Signatures: `train(x, y) -> loss`, `predict(x) -> y` and
`weights() -> w0..w9, b0..b9` (the variables' values).
expected.npz: x, y (the fixed inputs), loss0..loss2 (train's output on calls 1..3), and the
variables after the third call (w0..w9, b0..b9), named as the model's variables in creation order.

test_train_sig.c loads it with the C API, runs train three times and compares (1e-5 relative).
Run: build/venv/bin/python tools/gen_e1_models.py"""
import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "train_sig"))
ACTS = [tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, lambda v: tf.nn.leaky_relu(v, alpha=0.15), tf.nn.sigmoid,
        tf.nn.tanh, tf.nn.softplus, tf.nn.softsign]


class Mlp(tf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(20)
        sizes = [4] + [6] * len(ACTS) + [1]
        self.w, self.b = [], []
        for i in range(len(sizes) - 1):
            self.w.append(tf.Variable(rng.normal(0, 0.7, (sizes[i], sizes[i + 1])).astype(np.float32), name="w%d" % i))
            self.b.append(tf.Variable(rng.normal(0, 0.3, (sizes[i + 1],)).astype(np.float32), name="b%d" % i))
        self.lr = tf.Variable(0.05, name="lr")

    def forward(self, x):
        h = x
        for i, act in enumerate(ACTS):
            h = act(tf.nn.bias_add(tf.matmul(h, self.w[i]), self.b[i]))
        return tf.matmul(h, self.w[-1]) + self.b[-1]

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([None, 1], tf.float32)])
    def train(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.forward(x) - y))
        vs = self.w + self.b
        grads = tape.gradient(loss, vs)
        for v, g in zip(vs, grads):
            v.assign_sub(self.lr * g)
        return {"loss": loss}

    @tf.function(input_signature=[])
    def weights(self):
        out = {"w%d" % i: v.read_value() for i, v in enumerate(self.w)}
        out.update({"b%d" % i: v.read_value() for i, v in enumerate(self.b)})
        return out

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def predict(self, x):
        return {"y": self.forward(x)}


def main():
    m = Mlp()
    shutil.rmtree(OUT, ignore_errors=True)
    tf.saved_model.save(m, OUT, signatures={"train": m.train.get_concrete_function(),
                                            "predict": m.predict.get_concrete_function(),
                                            "weights": m.weights.get_concrete_function()})
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (8, 4)).astype(np.float32)
    y = (np.sin(x.sum(1, keepdims=True)) * 2).astype(np.float32)
    out = {"x": x, "y": y}
    for k in range(3):
        out["loss%d" % k] = m.train(tf.constant(x), tf.constant(y))["loss"].numpy()
    for i, v in enumerate(m.w):
        out["w%d" % i] = v.numpy()
    for i, v in enumerate(m.b):
        out["b%d" % i] = v.numpy()
    np.savez(os.path.join(OUT, "expected.npz"), **out)
    print("wrote", OUT, "losses", [float(out["loss%d" % k]) for k in range(3)])


if __name__ == "__main__":
    main()
