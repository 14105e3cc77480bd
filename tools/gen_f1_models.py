#!/usr/bin/env python3
"""gen_f1_models.py - writes tests/fixtures/train_sig_more/: a SavedModel whose `train` signature
(tf.GradientTape in a tf.function, SGD by assign_sub, the loss returned) holds the gradient ops
added in session 21 (f1): IgammaGradA (tf.math.igamma), RandomGammaGrad (tf.random.stateless_gamma),
CropAndResizeGradImage and CropAndResizeGradBoxes (tf.image.crop_and_resize, bilinear),
ScaleAndTranslateGrad (tf.image.resize with antialias=True),
QuantizeAndDequantizeV4Grad (tf.quantization.quantize_and_dequantize_v2), and a slice assign
(ResourceStridedSliceAssign: `v[1:3].assign(...)`); tf.linalg.cholesky is there too, though TF 2
differentiates it in Python (triangular solves), not with the CholeskyGrad op. Signatures: `train(x) -> loss` and
`weights() -> every variable`. expected.npz: x, loss0..loss2 (train on calls 1..3) and the
variables after the third call, by the weights signature's names.

test_train_sig_more.c runs it with the C API (1e-5 relative).
Run: build/venv/bin/python tools/gen_f1_models.py"""
import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "train_sig_more"))


class M(tf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(21)
        self.a = tf.Variable(rng.uniform(0.5, 3, (6,)).astype(np.float32), name="a")
        self.m = tf.Variable(rng.normal(0, 0.5, (3, 3)).astype(np.float32), name="m")
        self.img = tf.Variable(rng.uniform(0, 1, (2, 5, 6, 2)).astype(np.float32), name="img")
        self.boxes = tf.Variable(np.array([[0.1, 0.2, 0.7, 0.9], [0.3, 0.0, 0.9, 0.6], [0.8, 0.9, 0.1, 0.2]], np.float32),
                                 name="boxes")
        self.q = tf.Variable(rng.uniform(-2, 2, (8,)).astype(np.float32), name="q")
        self.s = tf.Variable(np.zeros((4, 3), np.float32), name="s")
        self.lr = tf.Variable(0.05, name="lr")

    @tf.function(input_signature=[tf.TensorSpec([6], tf.float32)])
    def train(self, x):
        with tf.GradientTape() as tape:
            l1 = tf.reduce_sum(tf.math.igamma(self.a, x))
            c = tf.linalg.cholesky(tf.matmul(self.m, self.m, transpose_b=True) + 2 * tf.eye(3))
            l2 = tf.reduce_sum(c * tf.reshape(x[:3], [3, 1]))
            crop = tf.image.crop_and_resize(self.img, self.boxes, [0, 1, 0], [3, 4])
            l3 = tf.reduce_sum(crop * tf.reshape(tf.range(24, dtype=tf.float32), [3, 4, 2]) / 24.0)
            qd = tf.quantization.quantize_and_dequantize_v2(self.q, -1.0, 1.0, range_given=True)
            l4 = tf.reduce_sum(qd * tf.concat([x, x[:2]], 0))
            l5 = tf.reduce_sum(tf.random.stateless_gamma([6], seed=[1, 2], alpha=self.a) * x)
            rz = tf.image.resize(self.img, [3, 4], method="lanczos3", antialias=True)
            l6 = tf.reduce_sum(rz * tf.reshape(tf.range(24, dtype=tf.float32), [3, 4, 2]) / 48.0)
            loss = l1 + l2 + l3 + l4 + l5 + l6
        vs = [self.a, self.m, self.img, self.boxes, self.q]
        grads = tape.gradient(loss, vs)
        for v, g in zip(vs, grads):
            v.assign_sub(self.lr * g)
        self.s[1:3].assign(tf.reshape(x, [2, 3]) + self.s[1:3])
        return {"loss": loss}

    @tf.function(input_signature=[])
    def weights(self):
        return {k: getattr(self, k).read_value() for k in ("a", "m", "img", "boxes", "q", "s")}


def main():
    m = M()
    shutil.rmtree(OUT, ignore_errors=True)
    tf.saved_model.save(m, OUT, signatures={"train": m.train.get_concrete_function(),
                                            "weights": m.weights.get_concrete_function()})
    x = np.array([0.3, 1.2, 2.5, 0.8, 4.0, 1.7], np.float32)
    out = {"x": x}
    for k in range(3):
        out["loss%d" % k] = m.train(tf.constant(x))["loss"].numpy()
    for k, v in m.weights().items():
        out[k] = v.numpy()
    np.savez(os.path.join(OUT, "expected.npz"), **out)
    ops = set()
    fn = m.train.get_concrete_function()
    for f in fn.graph.as_graph_def().library.function:
        ops |= {n.op for n in f.node_def}
    ops |= {n.op for n in fn.graph.as_graph_def().node}
    print("wrote", OUT, "losses", [float(out["loss%d" % k]) for k in range(3)])
    print("grad ops:", sorted(o for o in ops if "Grad" in o or "Assign" in o))


if __name__ == "__main__":
    main()
