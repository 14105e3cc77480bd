#!/usr/bin/env python3
"""gen_e3_models.py - writes tests/fixtures/train_sig_opt/: small SavedModels whose `train`
signature does one step of a linear model (x[N,4] @ w[4,3] + b, mean squared error) with a TF1
optimizer's apply_gradients (tf.compat.v1.train.AdamOptimizer, MomentumOptimizer with Nesterov,
RMSPropOptimizer centered, AdagradOptimizer, FtrlOptimizer), so the saved graph holds
ResourceApplyAdam / ResourceApplyMomentum / ResourceApplyCenteredRMSProp / ResourceApplyAdagrad /
ResourceApplyFtrl. The model is linear with MSE because its gradient needs only ops that exist
(MatMul, Sum, Mul, Sub, Reshape, BroadcastGradientArgs, ...): ReluGrad and BiasAddGrad are other
helpers' work.

Each model is called once before saving (v1 optimizers create their slots on the first call); the
expected values are what TensorFlow gives for 3 further calls of the same tf.function on the state
that was saved (tf.saved_model.load cannot restore v1 slot variables into Python):
<opt>/expected.npz holds x, y, loss (3 values) and w, b after the third.
test_ops_e3 loads each with the C API, runs 3 steps and compares.
Run: build/venv/bin/python tools/gen_e3_models.py
"""
import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                                    "train_sig_opt"))
V1 = tf.compat.v1.train
OPTS = {
    "adam": lambda: V1.AdamOptimizer(0.05),
    "momentum_nesterov": lambda: V1.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "rmsprop_centered": lambda: V1.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: V1.AdagradOptimizer(0.1),
    "ftrl": lambda: V1.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.01),
}


class Linear(tf.Module):
    def __init__(self, opt):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = tf.Variable(rng.normal(size=(4, 3)).astype(np.float32), name="w")
        self.b = tf.Variable(np.zeros(3, np.float32), name="b")
        self.opt = opt

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([None, 3], tf.float32)])
    def train(self, x, y):
        with tf.GradientTape() as tape:
            pred = tf.matmul(x, self.w) + self.b
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, [self.w, self.b])
        self.opt.apply_gradients(zip(grads, [self.w, self.b]))
        return {"loss": loss}

    @tf.function(input_signature=[])
    def read(self):
        return {"w": tf.identity(self.w), "b": tf.identity(self.b)}


def main():
    rng = np.random.default_rng(20)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 3)) + 0.1).astype(np.float32)
    shutil.rmtree(OUT, ignore_errors=True)
    for name, make in OPTS.items():
        m = Linear(make())
        m.train(tf.constant(x), tf.constant(y))  # creates the slots
        path = os.path.join(OUT, name)
        tf.saved_model.save(m, path, signatures={"train": m.train, "read": m.read})
        # TF's answer: the same object (its state is the one saved) called 3 more times; the saved
        # model itself cannot be loaded back into Python (tf.saved_model.load has no v1 slots).
        losses = [float(m.train(tf.constant(x), tf.constant(y))["loss"]) for _ in range(3)]
        np.savez(os.path.join(path, "expected.npz"), x=x, y=y, loss=np.array(losses, np.float32), w=m.w.numpy(),
                 b=m.b.numpy())
        ops = sorted({n.op for n in m.train.get_concrete_function().graph.as_graph_def().node if "Apply" in n.op})
        print(name, losses, ops)


if __name__ == "__main__":
    main()
