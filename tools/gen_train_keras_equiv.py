#!/usr/bin/env python3
"""gen_train_keras_equiv.py - issue #19's Keras config trained by Keras 3 on real Fashion-MNIST images
from Keras's own initial weights, for test_train_keras_equiv.c to replay in C and compare.

The model is bench/bench_train_keras.py's (Conv2D 32 s2 same relu + BatchNormalization + Conv2D 64
s2 same relu + BatchNormalization + GlobalAveragePooling2D + Dropout + Dense 10) with the dropout
rate set to 0 (the only random part of a step), sparse categorical cross-entropy from logits, batch
32, no shuffling, trained twice from the same initial weights: with plain SGD (learning rate 0.1,
one epoch: each weight moves by its gradients, so a wrong gradient shows at its size) and with Adam
(Keras's defaults, --epochs epochs: Adam's early steps are about +-lr whatever the gradient's
size, so its run checks the loop, the moving statistics and inference rather than the gradients).
The .npz holds:

  json          the model.to_json() text as uint8
  x, y          the first --n training images (uint8 [n, 28, 28, 1]; scaled by 1/255 on both sides) and labels
  xt            the first 64 test images (uint8), for inference outputs
  w0_K          Keras's initial value of model.weights[K] (glorot kernels, zero biases, BN's ones/zeros)
  sgd_K, adam_K its value after the SGD run / the Adam run (moving statistics included)
  sgd_loss, adam_loss   Keras's epoch losses (float64)
  sgd_pred, adam_pred   Keras's inference logits (training=False: the moving statistics) on xt

  /work/main/build/venv/bin/python tools/gen_train_keras_equiv.py \
      [--n 128] [--epochs 3] [--out tests/fixtures/train_keras_equiv/issue19.npz]

A bigger one (e.g. --n 6400 --epochs 1, 200 steps, not committed) is the same test at scale:
build/test_train_keras_equiv /tmp/big.npz.
"""
import argparse
import gzip
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * nd).reshape(dims)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--data", default=FASHION)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                  "fixtures", "train_keras_equiv", "issue19.npz"))
    a = ap.parse_args()
    import tensorflow as tf
    import keras
    from keras import layers as L
    tf.config.threading.set_intra_op_parallelism_threads(1)
    keras.utils.set_random_seed(a.seed)
    model = keras.Sequential([keras.Input((28, 28, 1)),
                              L.Conv2D(32, 3, strides=2, padding="same", activation="relu"), L.BatchNormalization(),
                              L.Conv2D(64, 3, strides=2, padding="same", activation="relu"), L.BatchNormalization(),
                              L.GlobalAveragePooling2D(), L.Dropout(0.0), L.Dense(10)])
    x = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))[:a.n, :, :, None]
    y = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))[:a.n].astype(np.int32)
    xt = read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz"))[:64, :, :, None]
    arrays = {"json": np.frombuffer(model.to_json().encode(), np.uint8), "x": x, "y": y, "xt": xt}
    w0 = [np.asarray(w.numpy(), np.float32) for w in model.weights]
    for k, w in enumerate(w0):
        arrays["w0_%d" % k] = w
    xf = (x / 255.0).astype(np.float32)
    for run, opt, epochs in (("sgd", keras.optimizers.SGD(learning_rate=0.1), 1),
                             ("adam", keras.optimizers.Adam(), a.epochs)):
        for v, w in zip(model.weights, w0):
            v.assign(w)
        model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        h = model.fit(xf, y, batch_size=32, epochs=epochs, shuffle=False, verbose=0)
        for k, w in enumerate(model.weights):
            arrays["%s_%d" % (run, k)] = np.asarray(w.numpy(), np.float32)
        arrays[run + "_loss"] = np.asarray(h.history["loss"], np.float64)
        arrays[run + "_pred"] = np.asarray(model((xt / 255.0).astype(np.float32), training=False), np.float32)
        print("%s: %s losses %s" % (a.out, run, h.history["loss"]))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    np.savez_compressed(a.out, **arrays)
    print("%s: %d images, %d weights (TF %s, Keras %s)" % (a.out, a.n, len(model.weights), tf.__version__,
                                                           keras.__version__))


if __name__ == "__main__":
    main()
