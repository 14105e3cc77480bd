#!/usr/bin/env python3
"""Goldens for tests/unit/test_train.c: a tiny CNN (Conv2D(2,3,relu), MaxPooling2D(2), Flatten,
Dense(4,relu), Dense(3) logits) with weights set from a formula, two train_on_batch steps of Keras 3
with sparse categorical cross-entropy from logits, for Adam, SGD with momentum and Nesterov SGD.
Prints the updated weights as C initialisers to paste into the test.

  /tmp/tfvenv/bin/python tools/make_train_goldens.py
"""
import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import keras


def formula(n, phase):
    # the same values the C test computes: 0.5 * sin(0.7 * i + phase)
    return np.array([0.5 * math.sin(0.7 * i + phase) for i in range(n)], dtype=np.float32)


def model():
    m = keras.Sequential([
        keras.Input((5, 5, 1)),
        keras.layers.Conv2D(2, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(4, activation="relu"),
        keras.layers.Dense(3),
    ])
    ws = []
    for k, w in enumerate(m.get_weights()):
        ws.append(formula(w.size, float(k)).reshape(w.shape))
    m.set_weights(ws)
    return m


def run(name, opt):
    m = model()
    m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    x = formula(4 * 25, 10.0).reshape(4, 5, 5, 1) + 0.5
    y = np.array([0, 2, 1, 2], dtype=np.int32)
    losses = [float(m.train_on_batch(x, y)) for _ in range(2)]
    print(f"/* {name}: losses {losses[0]:.9g} {losses[1]:.9g} */")
    print(f"static const float golden_{name}[] = {{")
    flat = np.concatenate([w.reshape(-1) for w in m.get_weights()])
    for i in range(0, flat.size, 6):
        print("    " + ", ".join(f"{v:.9g}f" for v in flat[i:i + 6]) + ",")
    print("};")
    print(f"static const double golden_{name}_loss[2] = {{{losses[0]:.9g}, {losses[1]:.9g}}};")


run("adam", keras.optimizers.Adam(learning_rate=0.01))
run("sgd_momentum", keras.optimizers.SGD(learning_rate=0.1, momentum=0.9))
run("sgd_nesterov", keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True))
