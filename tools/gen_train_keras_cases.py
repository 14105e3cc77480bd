#!/usr/bin/env python3
"""gen_train_keras_cases.py - writes tests/unit/train_keras_cases.h: small Keras 3 models (as
model.to_json() writes them), each trained by Keras for a few steps, with Keras's weights, moving
statistics, epoch losses and inference outputs afterwards.

test_train_keras.c builds each model with sm_seq_from_keras from the same JSON, sets the same
initial weights (formula below, one phase per weight in model.weights order), trains it with the
same optimizer, schedule, loss, batches (no shuffling) and compares. No bias feeds a batch norm
(its gradient is zero but for rounding, which Adam would magnify into steps of either sign).
Run: /work/main/build/venv/bin/python tools/gen_train_keras_cases.py > tests/unit/train_keras_cases.h
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers as L  # noqa: E402

N, BATCH, EPOCHS = 8, 4, 2


def formula(n, phase):
    """Same as kformula() in tests/unit/test_train_keras.c."""
    i = np.arange(n, dtype=np.float64)
    return (0.5 * np.sin(0.7 * i + phase)).astype(np.float32)


def init_weights(model):
    for k, w in enumerate(model.weights):
        v = formula(int(np.prod(w.shape)), k).reshape(w.shape)
        if w.path.endswith("moving_variance") or w.path.endswith("gamma"):
            v = (1.0 + np.abs(v)).astype(np.float32)
        w.assign(v)


def data(shape, classes):
    n_in = int(np.prod(shape))
    x = (formula(N * n_in, 10.0) + 0.5).reshape((N,) + tuple(shape))
    y = (np.arange(N) * 7 % classes).astype(np.int32)
    return x, y


def make_opt(spec):
    kind, kw, sched = spec
    lr = kw.pop("learning_rate")
    if sched:
        if sched[0] == "exponential":
            lr = keras.optimizers.schedules.ExponentialDecay(lr, sched[1], sched[2], staircase=len(sched) > 3)
        else:
            lr = keras.optimizers.schedules.CosineDecay(lr, sched[1], alpha=sched[2])
    cls = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam, "adamw": keras.optimizers.AdamW,
           "rmsprop": keras.optimizers.RMSprop}[kind]
    return cls(learning_rate=lr, **kw)


CASES = []


def case(name, build, in_shape, classes, opt, from_logits=True, loss="sparse"):
    CASES.append((name, build, in_shape, classes, opt, from_logits, loss))


case("bn_gap_adam", lambda: keras.Sequential([
    keras.Input((6, 6, 2)), L.Rescaling(0.5, offset=0.1),
    L.Conv2D(3, 3, strides=2, padding="same", activation="relu", use_bias=False), L.BatchNormalization(momentum=0.9),
    L.GlobalAveragePooling2D(), L.Dropout(0.0), L.Dense(3)]), (6, 6, 2), 3, ("adam", {"learning_rate": 0.01}, None))
case("avgpool_leaky_rmsprop_centered", lambda: keras.Sequential([
    keras.Input((5, 6, 1)), L.Conv2D(2, (2, 3), use_bias=False), L.LeakyReLU(negative_slope=0.2),
    L.AveragePooling2D(2, strides=1, padding="same"), L.Flatten(), L.BatchNormalization(center=False),
    L.Dense(3), L.Softmax()]), (5, 6, 1), 3,
    ("rmsprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}, None), False)
case("rmsprop_plain", lambda: keras.Sequential([
    keras.Input((4, 4, 1)), L.Conv2D(2, 3, padding="same", activation="relu"), L.MaxPooling2D(2),
    L.Flatten(), L.Dense(3)]), (4, 4, 1), 3, ("rmsprop", {"learning_rate": 0.01}, None))


def functional_reshape():
    i = keras.Input((24,))
    x = L.Reshape((4, 3, 2))(i)
    x = L.AveragePooling2D((2, 2), strides=(2, 1), padding="valid")(x)
    x = L.Reshape((-1,))(x)
    x = L.Dense(5, use_bias=False)(x)
    x = L.BatchNormalization(scale=False, epsilon=0.01)(x)
    x = L.ReLU()(x)
    o = L.Dense(4, activation="softmax")(x)
    return keras.Model(i, o)


case("functional_adamw_exponential", functional_reshape, (24,), 4,
     ("adamw", {"learning_rate": 0.02, "weight_decay": 0.1}, ("exponential", 3, 0.5)), False)
case("sgd_nesterov_cosine", lambda: keras.Sequential([
    keras.Input((6, 6, 1)), L.Conv2D(4, 3, strides=(2, 1), padding="valid", activation="relu"),
    L.BatchNormalization(), L.Activation("relu"), L.GlobalAveragePooling2D(), L.Dense(3)]), (6, 6, 1), 3,
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}, ("cosine", 3, 0.1)))
case("categorical_softmax_adam", lambda: keras.Sequential([
    keras.Input((5, 5, 1)), L.Conv2D(3, 2, activation="relu"), L.Flatten(), L.Dense(3, activation="softmax")]),
    (5, 5, 1), 3, ("adam", {"learning_rate": 0.01}, None), False, "categorical")
case("categorical_logits_sgd", lambda: keras.Sequential([
    keras.Input((6,)), L.Dense(5, activation="relu"), L.Dense(4)]), (6,), 4,
    ("sgd", {"learning_rate": 0.2, "momentum": 0.5}, None), True, "categorical")
case("sgd_exponential_staircase", lambda: keras.Sequential([
    keras.Input((8,)), L.Dense(6, activation="relu"), L.BatchNormalization(), L.Dense(3)]), (8,), 3,
    ("sgd", {"learning_rate": 0.1}, ("exponential", 2, 0.5, True)))


def cf(x):
    t = "%.9g" % x
    return t + (".0f" if "." not in t and "e" not in t and "n" not in t else "f")


def c_floats(v):
    v = np.asarray(v, dtype=np.float32).ravel()
    return "{" + ", ".join(cf(x) for x in v) + "}"


def c_str(s, width=96):
    """A C string literal, split into adjacent literals of about `width` characters."""
    parts = [s[i:i + width] for i in range(0, len(s), width)] or [""]
    return "\n    ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in parts)


def main():
    print("/* train_keras_cases.h - generated by tools/gen_train_keras_cases.py (TF %s, Keras %s); do not edit. */"
          % (__import__("tensorflow").__version__, keras.__version__))
    print("typedef struct keras_case {\n  const char *name, *json;\n  const char *opt; /* kind */\n"
          "  float lr, momentum, rho, weight_decay;\n  int nesterov, centered, from_logits, categorical; /* categorical: one-hot targets */\n"
          "  const char *schedule; /* sm_optimizer_set_schedule spec, NULL: constant */\n"
          "  int classes, nweights;\n  const float *weights; /* after training, model.weights order */\n"
          "  double loss[2]; /* epoch losses */\n  const float *pred; /* inference outputs after training */\n"
          "} keras_case;")
    rows = []
    for name, build, in_shape, classes, (kind, kw, sched), from_logits, loss in CASES:
        keras.utils.set_random_seed(1)
        model = build()
        text = model.to_json()
        init_weights(model)
        kwc = dict(kw)
        lf = keras.losses.CategoricalCrossentropy if loss == "categorical" else keras.losses.SparseCategoricalCrossentropy
        model.compile(optimizer=make_opt((kind, dict(kw), sched)), loss=lf(from_logits=from_logits))
        x, y = data(in_shape, classes)
        if loss == "categorical":
            y = np.eye(classes, dtype=np.float32)[y]  # one-hot
        h = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
        pred = model(x, training=False).numpy()
        w = np.concatenate([np.asarray(v.numpy(), np.float32).ravel() for v in model.weights])
        sched_s = "NULL"
        if sched:
            sched_s = c_str("%s:%d:%r%s" % (sched[0], sched[1], sched[2], ":staircase" if len(sched) > 3 else ""))
        print("static const float %s_w[] = %s;" % (name, c_floats(w)))
        print("static const float %s_pred[] = %s;" % (name, c_floats(pred)))
        rows.append("  {%s, %s, %s, %s, %s, %s, %s, %d, %d, %d, %d, %s, %d, %d, %s_w, {%.9g, %.9g}, %s_pred}," % (
            c_str(name), c_str(text), c_str(kind), cf(kwc["learning_rate"]), cf(kwc.get("momentum", 0.0)),
            cf(kwc.get("rho", 0.9)), cf(kwc.get("weight_decay", 0.004)), int(kwc.get("nesterov", False)),
            int(kwc.get("centered", False)), int(from_logits), int(loss == "categorical"), sched_s, classes, w.size, name,
            h.history["loss"][0], h.history["loss"][1], name))
    print("static const keras_case keras_cases[] = {")
    print("\n".join(rows))
    print("};")
    print("#define KERAS_N %d\n#define KERAS_BATCH %d\n#define KERAS_EPOCHS %d" % (N, BATCH, EPOCHS))


if __name__ == "__main__":
    main()
