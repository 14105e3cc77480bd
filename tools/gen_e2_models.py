#!/usr/bin/env python3
"""gen_e2_models.py - writes tests/fixtures/train_sig_cnn/: a SavedModel (tf.saved_model.save of a
tf.Module, TF's "on-device training" pattern) whose signatures train a small CNN with
tf.GradientTape and plain SGD (var.assign_sub(lr * g)), returning the loss:

  train       Conv2D SAME stride 2 + BiasAdd + Relu, DepthwiseConv2D, FusedBatchNormV3 in training
              mode, MaxPool, AvgPool, Dense (MatMul + BiasAdd), sparse softmax cross-entropy: its
              gradient holds Conv2DBackpropFilter/Input, DepthwiseConv2dNativeBackpropFilter/Input,
              FusedBatchNormGradV3, MaxPoolGrad, AvgPoolGrad, and ReluGrad and BiasAddGrad;
  train_core  the same network without Relu and with the biases added by a plain broadcasting Add
              (so its gradient needs none of ReluGrad / BiasAddGrad);
  weights     every variable, by name (to compare the state after training).

and expected.npz: the fixed inputs (x, labels), the initial variables, and what TF 2.21 gives for 3
successive calls of each training signature from the initial variables (losses and final
variables). test_train_sig_cnn loads the model with the C API and compares.
Run: build/venv/bin/python tools/gen_e2_models.py
"""
import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                                    "train_sig_cnn"))
rng = np.random.default_rng(2020)
N, H, W, C, K, CLASSES = 4, 16, 16, 3, 8, 4
LR = 0.05


def init(*shape, scale=0.3):
    return rng.normal(0, scale, shape).astype(np.float32)


class CNN(tf.Module):
    def __init__(self):
        super().__init__()
        self.conv_w = tf.Variable(init(3, 3, C, K), name="conv_w")
        self.conv_b = tf.Variable(init(K, scale=0.1), name="conv_b")
        self.dw_w = tf.Variable(init(3, 3, K, 1), name="dw_w")
        self.gamma = tf.Variable(1.0 + init(K, scale=0.1), name="gamma")
        self.beta = tf.Variable(init(K, scale=0.1), name="beta")
        self.dense_w = tf.Variable(init(2 * 2 * K, CLASSES), name="dense_w")
        self.dense_b = tf.Variable(init(CLASSES, scale=0.1), name="dense_b")
        self.vars = [self.conv_w, self.conv_b, self.dw_w, self.gamma, self.beta, self.dense_w, self.dense_b]

    def forward(self, x, core):
        h = tf.nn.conv2d(x, self.conv_w, strides=2, padding="SAME")
        h = h + self.conv_b if core else tf.nn.relu(tf.nn.bias_add(h, self.conv_b))
        h = tf.nn.depthwise_conv2d(h, self.dw_w, strides=[1, 1, 1, 1], padding="SAME")
        h, _, _ = tf.compat.v1.nn.fused_batch_norm(h, self.gamma, self.beta, epsilon=0.001, is_training=True)
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.nn.avg_pool2d(h, 2, 2, "VALID")
        h = tf.reshape(h, [-1, 2 * 2 * K])
        logits = tf.matmul(h, self.dense_w)
        return logits + self.dense_b if core else tf.nn.bias_add(logits, self.dense_b)

    def step(self, x, labels, core):
        with tf.GradientTape() as tape:
            logits = self.forward(x, core)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, self.vars)
        for v, g in zip(self.vars, grads):
            v.assign_sub(LR * g)
        return {"loss": loss}

    @tf.function(input_signature=[tf.TensorSpec([None, H, W, C], tf.float32), tf.TensorSpec([None], tf.int32)])
    def train(self, x, labels):
        return self.step(x, labels, False)

    @tf.function(input_signature=[tf.TensorSpec([None, H, W, C], tf.float32), tf.TensorSpec([None], tf.int32)])
    def train_core(self, x, labels):
        return self.step(x, labels, True)

    @tf.function(input_signature=[])
    def weights(self):
        return {v.name.split(":")[0]: v.read_value() for v in self.vars}


def main():
    m = CNN()
    x = rng.normal(0, 1, (N, H, W, C)).astype(np.float32)
    labels = np.array([0, 3, 1, 2], np.int32)
    initial = [v.numpy().copy() for v in m.vars]
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    tf.saved_model.save(m, OUT, signatures={"train": m.train, "train_core": m.train_core, "weights": m.weights})
    data = {"x": x, "labels": labels}
    for v, a in zip(m.vars, initial):
        data["init__" + v.name.split(":")[0]] = a
    for sig in ("train", "train_core"):
        for v, a in zip(m.vars, initial):
            v.assign(a)
        fn = m.train if sig == "train" else m.train_core
        data[sig + "__losses"] = np.array([float(fn(x, labels)["loss"]) for _ in range(3)], np.float32)
        for v in m.vars:
            data[sig + "__" + v.name.split(":")[0]] = v.numpy()
        print(sig, data[sig + "__losses"])
    np.savez(os.path.join(OUT, "expected.npz"), **data)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print("wrote %s (%d bytes)" % (OUT, total))


if __name__ == "__main__":
    main()
