#!/usr/bin/env python3
"""bench/bench_train_keras.py - a model from Keras's own config, trained by `savedmodel train
--model` and by Keras, one run (not a test); issue #19's acceptance.

  python3 bench/bench_train_keras.py [--build build] [--python build/venv/bin/python] [--data DIR]
                                     [--limit 60000] [--epochs 3] [--threads 2] [--no-record]

The model is issue #19's: Conv2D(32, 3, strides 2, same, relu), BatchNormalization,
Conv2D(64, 3, strides 2, same, relu), BatchNormalization, GlobalAveragePooling2D, Dropout(0.3),
Dense(10), written once by Keras's model.to_json() and given to both sides: Keras rebuilds it with
model_from_json, ours reads it with --model. Both: Adam (Keras's defaults), sparse categorical
cross-entropy from logits, batch 32, shuffled, the first --limit Fashion-MNIST training images
(scaled by 1/255), --epochs epochs, then the 10,000 test images. Goal: test accuracy within 1 %
(absolute) of Keras's. Then TensorFlow loads our export and runs serving_default on the test
images: the accuracy it gets must be ours (tools/check_trained_export.py compares the outputs
themselves). Seconds per epoch as in bench_train.py, whose Keras fit and timing this shares.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_train as bt  # noqa: E402  (read_idx, find, run_child, ours)

ACC_GOAL = 0.01


def make_json(python):
    code = (
        "import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import keras\nfrom keras import layers as L\n"
        "m = keras.Sequential([keras.Input((28, 28, 1)),\n"
        "  L.Conv2D(32, 3, strides=2, padding='same', activation='relu'), L.BatchNormalization(),\n"
        "  L.Conv2D(64, 3, strides=2, padding='same', activation='relu'), L.BatchNormalization(),\n"
        "  L.GlobalAveragePooling2D(), L.Dropout(0.3), L.Dense(10)])\n"
        "print(m.to_json())\n")
    return subprocess.run([python, "-c", code], stdout=subprocess.PIPE, check=True, text=True).stdout.strip()


def keras_child(model_json, data_dir, limit, epochs, threads, seed, export):
    x, y, xt, yt = bt.load_data(data_dir, limit, threads, seed)
    import numpy as np
    import tensorflow as tf
    import keras
    with open(model_json) as f:
        model = keras.models.model_from_json(f.read())
    r = bt.fit_timed(model, x, y, xt, yt, epochs)
    # TensorFlow runs our export on the same test images
    fn = tf.saved_model.load(export, tags=["serve"]).signatures["serving_default"]
    logits = np.concatenate([fn(inputs=tf.constant(xt[i:i + 1000]))["outputs"].numpy() for i in range(0, len(xt), 1000)])
    r["tf_on_ours_accuracy"] = float((logits.argmax(1) == yt).mean())
    return r


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        a = sys.argv[2:]
        print(json.dumps(keras_child(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--python", help="python with tensorflow (default BUILD/venv/bin/python)")
    ap.add_argument("--data", default=bt.FASHION)
    ap.add_argument("--limit", type=int, default=60000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    import run as bench_run
    load0 = bench_run.loadavg()
    work = tempfile.mkdtemp(prefix="bench-train-keras-", dir=args.build)
    try:
        model_json = os.path.join(work, "model.json")
        with open(model_json, "w") as f:
            f.write(make_json(args.python))
        print("bench: savedmodel train --model, %d images x %d epochs ..." % (args.limit, args.epochs), flush=True)
        me = bt.ours(args, work, ["--model", model_json])
        print("bench: Keras, the same ...", flush=True)
        cmd = [args.python, os.path.abspath(__file__), "--child", model_json, args.data, str(args.limit),
               str(args.epochs), str(args.threads), str(args.seed), me["export"]]
        rc, out, err, rss, wall = bt.run_child(cmd)
        if rc != 0:
            raise SystemExit("bench: the Keras run failed (exit %d): %s" % (rc, err[-3000:]))
        tf = json.loads(out.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    gap = me["test_accuracy"] - tf["test_accuracy"]
    fmt = lambda v: ", ".join("%.2f" % x for x in v)
    steps = (args.limit + 31) // 32
    rows = [
        ("**test accuracy: ours / Keras (difference)**", "%.4f / %.4f (%+.4f)" % (me["test_accuracy"],
                                                                                   tf["test_accuracy"], gap),
         "within %.2f" % ACC_GOAL, "yes" if abs(gap) <= ACC_GOAL else "**no**"),
        ("TensorFlow running our export: test accuracy", "%.4f" % tf["tf_on_ours_accuracy"],
         "= ours", "yes" if abs(tf["tf_on_ours_accuracy"] - me["test_accuracy"]) < 1e-4 else "**no**"),
        ("training loss per epoch: ours / Keras", "%s / %s" % (fmt(me["loss"]), fmt(tf["loss"])), "", ""),
        ("seconds per epoch: ours / Keras %s" % tf["tensorflow"], "%s / %s s (last: %.1f / %.1f ms/step, %.2fx)"
         % (fmt(me["epoch_s"]), fmt(tf["epoch_s"]), me["epoch_s"][-1] / steps * 1e3, tf["epoch_s"][-1] / steps * 1e3,
            tf["epoch_s"][-1] / me["epoch_s"][-1]), "", ""),
    ]
    notes = ["Both: issue #19's config (Conv2D 32 s2 same + BN + Conv2D 64 s2 same + BN + GAP + Dropout 0.3 + "
             "Dense 10) from one model.to_json(), Adam defaults, sparse CE from logits, batch 32, shuffled, first %d "
             "training images, %d epochs, %d threads each; ours: `%s`." % (
                 args.limit, args.epochs, args.threads, " ".join(shlex.quote(c) for c in me["cmd"][1:]))]
    bt.record("a Keras config trained here and in Keras (bench/bench_train_keras.py)", rows, notes, load0,
              args.no_record)
    return 0 if abs(gap) <= ACC_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
